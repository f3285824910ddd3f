//go:build unix

package childproc

import (
	"syscall"
	"time"
)

// GroupPollInterval is how often EndGroup looks whether a process group
// has emptied, 20 ms.
const GroupPollInterval = 20 * time.Millisecond

// EndGroup ends what is left of process group pgid: nothing when it is
// empty; else SIGTERM (and SIGCONT, so a stopped process can act on it),
// then SIGKILL if a member remains after grace. It returns once the
// group is empty, or a second after the SIGKILL, saying which signals it
// sent (none: the group was already empty).
func EndGroup(pgid int, grace time.Duration) (termed, killed bool) {
	if !GroupAlive(pgid) {
		return false, false
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	if waitGroup(pgid, grace) {
		return true, false
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGroup(pgid, time.Second)
	return true, true
}

// waitGroup polls until group pgid is empty (true) or d has passed.
func waitGroup(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !GroupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(GroupPollInterval)
	}
}

// groupAliveByKill asks the kernel whether any process is in group pgid.
func groupAliveByKill(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}
