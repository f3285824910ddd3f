//go:build unix

// Proves `fencegate ls` shows a read/write lock with real processes (a
// serve, `fencegate lock --read` and `fencegate lock` wrappers, ls run as
// a process): while two readers hold it, its row says "(2 readers)" with
// a line for each reader's lease, fence, time held and left; its queue
// names each waiter's mode (the writer, then a third reader held back by
// it) and says that the queued writer keeps new readers out; --held lists
// it though no writer holds it; -o json carries the readers and the
// waiters' modes; `fencegate status` names each waiter's mode and the
// writer preference too. Once both readers end, the writer holds (its row names
// it, the reader still queued); once the writer ends, the third reader
// holds, alone.
package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

func TestLsReadWriteLock(t *testing.T) {
	_, url := serveProc(t)
	const name = "rwls/report"
	hold := func(who string, read bool) *proc {
		args := []string{"--ttl", "10s", name, "--", "sh", "-c", `echo "` + who + ` holds $FENCEGATE_RESOURCE at fence $FENCEGATE_FENCE"; exec sleep 120`}
		if read {
			args = append([]string{"--read"}, args...)
		}
		return lockProc(t, url, args...)
	}
	ls := func(args ...string) string {
		t.Helper()
		out, _ := cli(t, 0, append([]string{"ls", "rwls/", "--registry", url, "--token", lockToken}, args...)...)
		return out
	}
	status := func() wire.LockStatus {
		t.Helper()
		var l wire.LockList
		if err := json.Unmarshal([]byte(ls("-o", "json")), &l); err != nil || len(l.Locks) != 1 {
			t.Fatalf("ls -o json: %v %+v", err, l)
		}
		return l.Locks[0]
	}
	waitQueue := func(n int) wire.LockStatus {
		t.Helper()
		for range 200 {
			if v := status(); len(v.Waiters) == n {
				return v
			}
		}
		t.Fatalf("the queue never reached %d waiters", n)
		return wire.LockStatus{}
	}
	end := func(p *proc, who string) {
		t.Helper()
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM) // the wrapper stops its child and releases
		p.wait(t, who)
	}

	r1, r2 := hold("R1", true), hold("R2", true)
	f := r1.waitOutput(t, regexp.MustCompile(`R1 holds `+name+`/_read at fence (\d+)`)) // the fence every reader carries now
	r2.waitOutput(t, regexp.MustCompile(`R2 holds `+name+`/_read at fence `+f+`\n`))
	w := hold("W", false)
	waitQueue(1)
	r3 := hold("R3", true) // behind the queued writer: writer preference
	v := waitQueue(2)
	if len(v.Readers) != 2 || v.Holder != nil || v.Waiters[0].Read || !v.Waiters[1].Read {
		t.Fatalf("ls -o json: readers %+v, holder %+v, waiters %+v; want two readers, the writer then a reader queued", v.Readers, v.Holder, v.Waiters)
	}
	out := ls()
	for _, re := range []string{
		`(?m)^` + name + `\s+\(2 readers\)\s+` + f + `\s+-\s+-\s+2 \(longest [0-9.]+m?s\): writer, reader$`,
		`(?m)^  reader worker-1, lease ` + regexp.QuoteMeta(v.Readers[0].Lease) + ` \(fence ` + f + `\), held [0-9.]+m?s, left [0-9.]+s$`,
		`(?m)^  reader worker-1, lease ` + regexp.QuoteMeta(v.Readers[1].Lease) + ` \(fence ` + f + `\), held [0-9.]+m?s, left [0-9.]+s$`,
		`(?m)^  a writer is queued: new readers wait behind it \(writer preference\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("ls lacks %s:\n%s", re, out)
		}
	}
	st, _ := cli(t, 0, "status", name, "--registry", url, "--token", lockToken)
	for _, re := range []string{`(?m)^holder:       none \(2 readers share it\)$`, `(?m)^              a writer is queued: new readers wait behind it \(writer preference\)$`,
		`(?m)^  1\. worker-1, a writer, class lock, waiting `, `(?m)^  2\. worker-1, a reader, class lock, waiting `} {
		if !regexp.MustCompile(re).MatchString(st) {
			t.Errorf("status lacks %s:\n%s", re, st)
		}
	}
	if held := ls("--held"); !strings.Contains(held, name+" ") || !strings.Contains(held, "(2 readers)") {
		t.Errorf("ls --held leaves out the lock its readers hold:\n%s", held)
	}
	if strings.Contains(w.out.String(), "W holds") || strings.Contains(r3.out.String(), "R3 holds") {
		t.Fatalf("the writer or the third reader ran beside the readers:\n%s%s", w.out, r3.out)
	}

	end(r1, "reader 1")
	end(r2, "reader 2")
	fw := w.waitOutput(t, regexp.MustCompile(`W holds `+name+` at fence (\d+)`))
	if a, b := atoi(t, fw), atoi(t, f); a <= b {
		t.Fatalf("the writer's fence %s is not above the readers' %s", fw, f)
	}
	v = waitQueue(1)
	out = ls()
	if v.Holder == nil || len(v.Readers) != 0 || !v.Waiters[0].Read ||
		!regexp.MustCompile(`(?m)^`+name+`\s+worker-1\s+`+fw+`\s+[0-9.]+m?s\s+[0-9.]+s\s+1 \(longest [0-9.]+m?s\): reader$`).MatchString(out) ||
		strings.Contains(out, "  reader ") || strings.Contains(out, "writer preference") {
		t.Fatalf("the writer holds: ls shows\n%s(json holder %+v readers %+v waiters %+v)", out, v.Holder, v.Readers, v.Waiters)
	}

	end(w, "the writer")
	r3.waitOutput(t, regexp.MustCompile(`R3 holds `+name+`/_read at fence `+fw+`\n`)) // the last writer's fence
	out = ls()
	if !regexp.MustCompile(`(?m)^`+name+`\s+\(1 reader\)\s+`+fw+`\s+-\s+-\s+0$`).MatchString(out) || strings.Count(out, "  reader worker-1, lease ") != 1 {
		t.Fatalf("the third reader holds alone: ls shows\n%s", out)
	}
	end(r3, "reader 3")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
