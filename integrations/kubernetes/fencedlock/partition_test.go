//go:build unix

// Proves, with client-go's own LeaderElector in two processes on a real
// `serve --dev` and real PostgreSQL, that of two electors started
// together exactly one leads while it renews, however long it leads (the
// lock does not depose a healthy leader: Config.Check's HealthyLead
// rule); and that a leader cut off from the registry stops leading
// (OnStoppedLeading) no later than its lease's local deadline, after
// which the other elector leads at a higher term and writes through the
// gate. The negative control gives the cut-off leader's elector a
// RenewDeadline of 5.5 s rather than the lock's 1 s (a
// LeaderElectionConfig built by hand, not by ElectionConfig): its
// OnStoppedLeading then comes after the local deadline, so the assertion
// can fail, and the bound rests on the elector giving up within the
// lock's RenewDeadline + RetryPeriod.
package fencedlock

import (
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/integrations/kubernetes/internal/proctest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

var (
	stoppedAt = regexp.MustCompile(`stopped leading at=(\d+) deadline=(\d+)`)
	readyLine = regexp.MustCompile(`(?m)^ready$`)
)

func TestPartitionedLeaderStopsByItsDeadline(t *testing.T) {
	t.Parallel()
	_, url := serveDev(t)
	for _, checked := range []bool{true, false} {
		t.Run(map[bool]string{true: "checked", false: "elector-renew-deadline-past-the-lease"}[checked], func(t *testing.T) {
			t.Parallel()
			partitioned(t, url, checked)
		})
	}
}

func partitioned(t *testing.T, registry string, checked bool) {
	dsn := pgtest.NewDatabase(t)
	db := openReport(t, dsn)
	resource := "election/partition-" + strconv.FormatBool(checked)
	var links [2]*link
	var procs [2]*proctest.Proc
	for i, id := range []string{"a", "b"} {
		links[i] = newLink(t, strings.TrimPrefix(registry, "http://"))
		env := []string{envElector + "=1", "FG_REGISTRY=http://" + links[i].addr(), "FG_RESOURCE=" + resource,
			"FG_IDENTITY=" + id, "FG_DSN=" + dsn, "FG_GATED=1"}
		if !checked {
			env = append(env, "FG_ELECTOR_RENEW_DEADLINE=5500ms")
		}
		procs[i] = proctest.Start(t, env, testBinary(t))
		procs[i].Wait(t, readyLine) // one migrates the gate's schema at a time
	}

	// Exactly one leads, and keeps leading while it can renew.
	leader, leaderTerm := firstLeader(t, procs)
	other := 1 - leader
	if checked {
		hold := 2 * storyTimings.LeaseDuration
		time.Sleep(hold)
		if leadingLine.MatchString(procs[other].Out()) || stoppedAt.MatchString(procs[leader].Out()) {
			t.Fatalf("within %s of healthy leadership the leader stopped or the other led:\nleader: %s\nother: %s",
				hold, procs[leader].Out(), procs[other].Out())
		}
	}

	// The leader is cut off: it stops leading by its local deadline.
	cut := time.Now()
	links[leader].cut()
	m := procs[leader].Wait(t, stoppedAt)
	at, deadline := ms(t, m[1]), ms(t, m[2])
	t.Logf("cut-off leader stopped %s after the cut; local deadline − stop = %s",
		at.Sub(cut).Round(time.Millisecond), deadline.Sub(at).Round(time.Millisecond))
	if !checked {
		if !at.After(deadline) {
			t.Fatalf("with the elector's RenewDeadline past the lease the leader still stopped by its deadline (at %s, deadline %s): the assertion cannot fail", at, deadline)
		}
		return
	}
	if at.After(deadline) {
		t.Fatalf("the cut-off leader stopped leading at %s, %s after its local deadline %s", at, at.Sub(deadline), deadline)
	}

	// The other takes over at a higher term and its write is accepted.
	if term := term(t, procs[other].Wait(t, leadingLine)); term <= leaderTerm {
		t.Fatalf("the new leader's term %d is not above the cut-off leader's %d", term, leaderTerm)
	}
	procs[other].Send(t, "write by the new leader")
	if got := procs[other].Wait(t, outcomeLine)[1]; got != "ACCEPTED" {
		t.Fatalf("the new leader's write: %s, want ACCEPTED", got)
	}
	procs[leader].Send(t, "write by the cut-off leader")
	if got := procs[leader].Wait(t, outcomeLine)[1]; got != "NOT_LEADING" {
		t.Fatalf("the cut-off leader's write: %s, want NOT_LEADING (its term is over)", got)
	}
	if row := value(t, db); row != "by the new leader" {
		t.Fatalf("the row holds %q, want the new leader's", row)
	}
}

// firstLeader waits until one of procs prints that it leads and returns
// its index and term; both leading is a failure.
func firstLeader(t *testing.T, procs [2]*proctest.Proc) (int, uint64) {
	t.Helper()
	for deadline := time.Now().Add(proctest.WaitMax); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		a := leadingLine.FindStringSubmatch(procs[0].Out())
		b := leadingLine.FindStringSubmatch(procs[1].Out())
		switch {
		case a != nil && b != nil:
			t.Fatalf("both lead: %q and %q", a[0], b[0])
		case a != nil:
			return 0, term(t, a)
		case b != nil:
			return 1, term(t, b)
		}
	}
	t.Fatal("neither elector led")
	return 0, 0
}

func ms(t *testing.T, s string) time.Time {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(n)
}

// link is one elector's network path to the registry: a TCP relay that
// cut severs, closing its connections and every later one at once (the
// elector's calls are lost, as across a partition).
type link struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newLink(t *testing.T, target string) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); l.cut() })
	go l.serve()
	return l
}

func (l *link) addr() string { return l.ln.Addr().String() }

func (l *link) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		l.mu.Lock()
		if l.down {
			l.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		l.conns = append(l.conns, c, up)
		l.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// cut severs the link for good.
func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}
