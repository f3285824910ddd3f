// Package childproc is `fencegate demo`'s process management: child
// processes that die with their parent (SysProcAttr), whose stdout is
// read line by line and whose stderr is kept (Proc), that can be frozen
// with SIGSTOP and thawed, and stopped together. It is not part of the
// ledger example.
package childproc
