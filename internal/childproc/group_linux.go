package childproc

import (
	"os"
	"strconv"
	"strings"
)

// GroupAlive reports whether process group pgid has a member that is not
// a zombie. Linux reads /proc, so a zombie that nobody reaps (an orphan
// under an init that does not reap) does not count: it runs nothing.
func GroupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return groupAliveByKill(pgid)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pg, ok := statFields(string(b))
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// statFields reads the state and process group of a /proc/PID/stat line:
// "pid (comm) state ppid pgrp ...", comm possibly holding spaces and
// parentheses (hence the last ')').
func statFields(s string) (state byte, pgrp int, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	return f[0][0], pg, err == nil
}
