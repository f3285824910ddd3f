// Package childproc is the binary's process management: child processes
// that die with their parent (SysProcAttr), whose stdout is read line by
// line and whose stderr is kept (Proc), that can be frozen with SIGSTOP
// and thawed, and stopped together (`fencegate demo`); and process groups
// ended whole, stragglers included (EndGroup, GroupAlive: what `fencegate
// lock` leaves of its child). It is not part of the ledger example.
package childproc
