//go:build unix

// The elector process the stories run, proving nothing on its own: this
// test binary, run again with FENCEDLOCK_TEST_ELECTOR set, is client-go's
// own LeaderElector on a Lock over `serve --dev`, and writes the one row
// of a PostgreSQL table as its stdin tells it — through the gate
// (client.Apply with sqlgate under the term's lease) or, for the negative
// control, straight to the table after checking that it leads.
package fencedlock

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// storyTimings are the stories' elector timings: a 6 s lease (5 s of
// local life), renewals tried every 300 ms and given up after 1 s; the
// stop lead, 1.5 s, is within the 1.92 s HealthyLead allows.
var storyTimings = Config{LeaseDuration: 6 * time.Second, RenewDeadline: time.Second, RetryPeriod: 300 * time.Millisecond}

// elector is one elector process's state.
type elector struct {
	lock   *Lock
	gated  bool
	local  *sqlgate.Local
	mu     sync.Mutex
	leader context.Context // the leader's context, once leading
	resume chan struct{}   // a paused write goes on
}

// electorMain is the elector process: FG_REGISTRY, FG_RESOURCE,
// FG_IDENTITY, FG_DSN and FG_GATED ("1": through the gate) configure it,
// and FG_ELECTOR_RENEW_DEADLINE, for a negative control, gives client-go's
// elector a RenewDeadline other than the lock's; it prints "ready" once
// its gate's schema is in place, "leading term=N", "paused term=N", "outcome CODE" and "stopped leading
// at=UNIXMS deadline=UNIXMS" (the term's local deadline as it stood, 0
// if it never led); it reads "write VALUE", "pause-write VALUE", "go" and
// "quit".
func electorMain() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := httpclient.Connect(ctx, os.Getenv("FG_REGISTRY"), httpclient.WithBearerToken("fencegate-dev-token"))
	if err != nil {
		return fail(err)
	}
	cfg := storyTimings
	cfg.Resource, cfg.Identity = os.Getenv("FG_RESOURCE"), os.Getenv("FG_IDENTITY")
	lock, err := New(w.Session, cfg)
	if err != nil {
		return fail(err)
	}
	e := &elector{lock: lock, gated: os.Getenv("FG_GATED") == "1", resume: make(chan struct{})}
	if e.local, err = sqlgate.OpenLocal(ctx, os.Getenv("FG_DSN"), w.Verifier); err != nil {
		return fail(err)
	}
	defer e.local.Close()
	fmt.Println("ready")
	lec := lock.ElectionConfig(leaderelection.LeaderCallbacks{
		OnStartedLeading: e.lead,
		OnStoppedLeading: func() {
			fmt.Printf("stopped leading at=%d deadline=%d\n", time.Now().UnixMilli(), lock.deadline())
		},
	})
	if d := os.Getenv("FG_ELECTOR_RENEW_DEADLINE"); d != "" {
		if lec.RenewDeadline, err = time.ParseDuration(d); err != nil {
			return fail(err)
		}
	}
	go leaderelection.RunOrDie(ctx, lec)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, value, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "write":
			go e.write(value, false)
		case "pause-write":
			go e.write(value, true)
		case "go":
			e.resume <- struct{}{}
		case "quit":
			return 0
		}
	}
	return 0
}

// deadline is the term's local deadline in Unix milliseconds, 0 without
// a term.
func (l *Lock) deadline() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lease == nil {
		return 0
	}
	return l.lease.Deadline().UnixMilli()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "elector:", err)
	return 1
}

// lead is OnStartedLeading: it keeps the leader's context for the writes
// until it ends.
func (e *elector) lead(ctx context.Context) {
	lease, _ := LeaseFrom(ctx)
	e.mu.Lock()
	e.leader = ctx
	e.mu.Unlock()
	fmt.Printf("leading term=%d\n", lease.Fence())
	<-ctx.Done()
}

// write sets the row to value as the leader and prints the outcome; with
// pause it stops just before the database sees the write (the envelope
// built, or the leadership checked), until "go".
func (e *elector) write(value string, pause bool) {
	e.mu.Lock()
	ctx := e.leader
	e.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		fmt.Println("outcome NOT_LEADING")
		return
	}
	lease, _ := LeaseFrom(ctx)
	set := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE report SET value = $1, term = $2 WHERE id = 1`, value, int64(lease.Fence()))
		return err
	}
	if !e.gated {
		e.pause(pause, lease)
		if err := e.plainWrite(set); err != nil {
			fmt.Println("outcome", outcome(err))
			return
		}
		fmt.Println("outcome WRITTEN")
		return
	}
	g := pausingGate{inner: e.local, pause: func() { e.pause(pause, lease) }}
	_, err := client.Apply(ctx, lease, g, []byte(value), set)
	fmt.Println("outcome", outcome(err))
}

func (e *elector) pause(pause bool, lease *client.Lease) {
	if pause {
		fmt.Printf("paused term=%d\n", lease.Fence())
		<-e.resume
	}
}

// plainWrite is the lease-only write: the row, no gate.
func (e *elector) plainWrite(set func(context.Context, *sql.Tx) error) error {
	ctx := context.Background()
	tx, err := e.local.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := set(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func outcome(err error) string {
	switch o := gate.OutcomeOf(err); {
	case err == nil:
		return "ACCEPTED"
	case o != "":
		return string(o)
	case errors.Is(err, client.ErrNotCertain):
		return "NOT_CERTAIN"
	default:
		return "ERROR " + err.Error()
	}
}

// pausingGate is the gate with a pause between the envelope's building
// and the database: a leader frozen there (SIGSTOP, a long GC pause)
// wakes with its write already made, and sends it. The write then runs
// without the leader's context, as one already handed to the database
// would.
type pausingGate struct {
	inner *sqlgate.Local
	pause func()
}

func (g pausingGate) Apply(ctx context.Context, caller string, m *gate.Mutation, fn func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
	g.pause()
	return g.inner.Apply(context.WithoutCancel(ctx), caller, m, fn)
}
