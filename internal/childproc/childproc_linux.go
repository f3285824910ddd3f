package childproc

import "syscall"

// SysProcAttr makes the kernel kill the child if the process that started
// it dies first (SIGKILL also ends a child stopped with SIGSTOP), so a
// killed demo never leaves a registry or ledger running.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
