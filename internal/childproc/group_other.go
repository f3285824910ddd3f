//go:build unix && !linux

package childproc

// GroupAlive reports whether process group pgid has a member (a zombie
// counts: without /proc there is no telling).
func GroupAlive(pgid int) bool { return groupAliveByKill(pgid) }
