//go:build !linux

package childproc

import "syscall"

// SysProcAttr returns nil: without Linux's parent-death signal, the demo
// relies on stopping its children itself.
func SysProcAttr() *syscall.SysProcAttr { return nil }
