// This file proves the queue's contract: a call that finds a free slot
// goes at once, alone; calls made while every slot is busy go together,
// in order, in as few groups as Group allows, when a slot frees; a call
// withdrawn while queued is never sent, and one whose context ends after
// it was sent says so; a group's context lives until its last caller
// gives up.
package batch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

type call struct {
	n    int
	done chan struct{}
}

// recorder is a Queue whose groups are recorded; without a gate they
// are delivered at once, else each waits for a token from the gate (or
// its close), after saying on held that it waits.
type recorder struct {
	mu     sync.Mutex
	groups [][]int
	gate   chan struct{}
	held   chan struct{}
	q      Queue[*call]
}

func newRecorder(inflightMax, groupMax int, gated bool) *recorder {
	r := &recorder{held: make(chan struct{}, inflightMax)}
	if gated {
		r.gate = make(chan struct{})
	}
	r.q = Queue[*call]{InflightMax: inflightMax, Send: r.send}
	if groupMax > 0 {
		r.q.Group = func() func(*call) bool {
			n := 0
			return func(*call) bool { n++; return n <= groupMax }
		}
	}
	return r
}

func (r *recorder) send(g []*call) {
	if r.gate != nil {
		select {
		case r.held <- struct{}{}:
		default:
		}
		<-r.gate
	}
	var ns []int
	for _, c := range g {
		ns = append(ns, c.n)
	}
	r.mu.Lock()
	r.groups = append(r.groups, ns)
	r.mu.Unlock()
	for _, c := range g {
		close(c.done)
	}
}

func (r *recorder) do(ctx context.Context, n int) (bool, error) {
	c := &call{n: n, done: make(chan struct{})}
	return r.q.Do(ctx, c, c.done)
}

// fill makes every slot busy with a call that waits for the gate.
func (r *recorder) fill(t *testing.T, wg *sync.WaitGroup) {
	for i := range r.q.InflightMax {
		wg.Go(func() {
			if _, err := r.do(context.Background(), -1-i); err != nil {
				t.Error(err)
			}
		})
	}
	for range r.q.InflightMax {
		<-r.held
	}
}

func (r *recorder) waitQueued(t *testing.T, n int) {
	for i := 0; r.q.Queued() < n; i++ {
		if i == 10_000 {
			t.Fatalf("%d calls queued, want %d", r.q.Queued(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestALoneCallGoesAtOnceAlone(t *testing.T) {
	r := newRecorder(2, 0, false)
	for i := range 3 {
		if sent, err := r.do(context.Background(), i); !sent || err != nil {
			t.Fatalf("call %d: sent %v, %v", i, sent, err)
		}
	}
	if want := [][]int{{0}, {1}, {2}}; !slices.EqualFunc(r.groups, want, slices.Equal) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
}

func TestQueuedCallsGoTogetherInOrder(t *testing.T) {
	r := newRecorder(1, 3, true)
	var wg sync.WaitGroup
	r.fill(t, &wg)
	for i := range 5 {
		wg.Go(func() {
			if _, err := r.do(context.Background(), i); err != nil {
				t.Error(err)
			}
		})
		r.waitQueued(t, i+1) // queued in this order
	}
	close(r.gate)
	wg.Wait()
	// The held call, then the queue in groups of at most three, in order.
	if want := [][]int{{-1}, {0, 1, 2}, {3, 4}}; !slices.EqualFunc(r.groups, want, slices.Equal) {
		t.Fatalf("groups %v, want %v", r.groups, want)
	}
	// The last sender frees its slot just after delivering: wait for it.
	for i := 0; ; i++ {
		r.q.mu.Lock()
		inflight := r.q.inflight
		r.q.mu.Unlock()
		if inflight == 0 {
			break
		}
		if i == 10_000 {
			t.Fatalf("%d slots still taken", inflight)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestWithdrawnCallIsNeverSent(t *testing.T) {
	r := newRecorder(1, 0, true)
	var wg sync.WaitGroup
	r.fill(t, &wg)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		sent, err := r.do(ctx, 7)
		if sent {
			err = errors.New("reported sent")
		}
		got <- err
	}()
	r.waitQueued(t, 1)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn call: %v, want context.Canceled and not sent", err)
	}
	close(r.gate)
	wg.Wait()
	for _, g := range r.groups {
		if slices.Contains(g, 7) {
			t.Fatalf("the withdrawn call was sent: %v", r.groups)
		}
	}
}

func TestCallEndedInFlightIsReportedSent(t *testing.T) {
	r := newRecorder(1, 0, true)
	var wg sync.WaitGroup
	r.fill(t, &wg)
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		sent bool
		err  error
	}
	got := make(chan result, 1)
	go func() {
		sent, err := r.do(ctx, 1)
		got <- result{sent, err}
	}()
	r.waitQueued(t, 1)
	r.gate <- struct{}{} // the held call's group goes; its slot sends the queue
	<-r.held             // which waits at the gate, in flight
	cancel()
	if res := <-got; !res.sent || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("call ended in flight: sent %v, %v; want sent and context.Canceled", res.sent, res.err)
	}
	close(r.gate)
	wg.Wait()
}

func TestGroupContextLivesUntilItsLastCaller(t *testing.T) {
	type key struct{}
	a, cancelA := context.WithCancel(context.WithValue(context.Background(), key{}, "trace"))
	b, cancelB := context.WithCancel(context.Background())
	ctx, stop := Context(a, []context.Context{a, b})
	defer stop()
	if ctx.Value(key{}) != "trace" {
		t.Fatal("the group's context lost its first call's values")
	}
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("one caller gave up and the group's context ended")
	case <-time.After(10 * time.Millisecond):
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("every caller gave up and the group's context lives on")
	}
}

// A call not ready stays queued though a slot is free, no group takes
// it, and Kick sends it once it is ready. Negative control: with Ready
// ignored the call is sent at once.
func TestNotReadyWaitsForKick(t *testing.T) {
	r := newRecorder(2, 0, false)
	var mu sync.Mutex
	ok := false
	r.q.Ready = func(*call) bool {
		mu.Lock()
		defer mu.Unlock()
		return ok
	}
	errs := make(chan error, 1)
	go func() {
		_, err := r.do(context.Background(), 1)
		errs <- err
	}()
	for i := 0; r.q.Queued() < 1; i++ {
		if i == 10_000 {
			t.Fatal("the call not ready was not queued")
		}
		time.Sleep(100 * time.Microsecond)
	}
	r.q.Kick() // not ready yet: nothing goes
	time.Sleep(10 * time.Millisecond)
	r.mu.Lock()
	early := len(r.groups)
	r.mu.Unlock()
	if early != 0 {
		t.Fatalf("a call not ready was sent: %v", r.groups)
	}
	mu.Lock()
	ok = true
	mu.Unlock()
	r.q.Kick()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.groups[0], []int{1}) {
		t.Fatalf("groups %v", r.groups)
	}
}
