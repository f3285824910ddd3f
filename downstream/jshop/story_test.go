// This file proves the hand-off over JetStream on SQLite and PostgreSQL,
// the target in another service's database: A's jobs are relayed and
// delivered late, after B took over and B's jobs were applied, and are
// STALE_OWNER and terminated; a consumer that dies after applying a job,
// before acknowledging it, gets it again after the ack wait and replays
// it; a relay that publishes a job twice is deduplicated by its message ID.
// The negative control consumes without the target's gate, and A's late
// job overwrites B's effect.
package jshop_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencegate/fencegate/downstream/jshop"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

func jobOf(t *testing.T, msg jetstream.Msg) *gate.Job {
	var a riverhop.Args
	if err := json.Unmarshal(msg.Data(), &a); err != nil {
		t.Error(err)
		return nil
	}
	j, err := gate.DecodeJob(a.Job)
	if err != nil {
		t.Error(err)
	}
	return j
}

// takeover plays the story with apply handling each delivered message and
// done telling when B's (then A's) jobs have been handled; it returns the
// mirror.
func (e *env) takeover(apply jetstream.MessageHandler, done func(jobs ...string)) map[string]string {
	t := e.t
	release := make(chan struct{})
	e.consume(wait, func(msg jetstream.Msg) {
		if j := jobOf(t, msg); j != nil && j.OperationID == "settle-a" {
			go func() { <-release; apply(msg) }() // A's jobs arrive late
			return
		}
		apply(msg)
	})
	la, err := e.reg.Acquire(e.ctx, e.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
	if err != nil {
		t.Fatal(err)
	}
	e.write(la, clienttest.OwnerA, 1, "total", "100")
	e.write(la, clienttest.OwnerA, 2, "rows", "10")
	e.reg.Clock.Advance(clienttest.TTL + 2*time.Second) // A pauses past its TTL
	lb, err := e.reg.Acquire(e.ctx, e.reg.Worker(clienttest.OwnerB, 2, true), clienttest.Request("settle-b"))
	if err != nil {
		t.Fatal(err)
	}
	e.write(lb, clienttest.OwnerB, 1, "total", "200")
	e.write(lb, clienttest.OwnerB, 2, "rows", "20")
	done("2/1", "2/2")
	close(release)
	done("1/1", "1/2")
	return e.mirror()
}

func TestTakeoverOverJetStream(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			got := e.takeover(e.consumer.Handle, func(jobs ...string) {
				want := gate.Accepted
				if jobs[0] == "1/1" {
					want = gate.StaleOwner
				}
				e.waitOutcomes(want, jobs...)
			})
			if got["total"] != "200 by settle-b" || got["rows"] != "20 by settle-b" {
				t.Fatalf("mirror %v, want B's", got)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.calls["1/1"]+e.calls["1/2"] != 0 || e.calls["2/1"] != 1 || e.calls["2/2"] != 1 {
				t.Fatalf("handler calls %v: want B's jobs once each, A's never", e.calls)
			}
		})
	}
}

// TestNegativeControlConsumerWithoutTargetGate applies each message's
// effect directly: A's late job overwrites B's total.
func TestNegativeControlConsumerWithoutTargetGate(t *testing.T) {
	e := newEnv(t, backends[0])
	handled := make(chan string, 8)
	direct := func(msg jetstream.Msg) {
		var a riverhop.Args
		json.Unmarshal(msg.Data(), &a)
		j := jobOf(t, msg)
		tx, err := e.down.BeginTx(e.ctx, nil)
		if err == nil {
			err = e.consumer.Handlers[hop](e.ctx, tx, j, a.Payload)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			t.Error(err)
		}
		msg.Ack()
		handled <- key(j)
	}
	got := e.takeover(direct, func(jobs ...string) {
		for range jobs {
			select {
			case <-handled:
			case <-time.After(wait):
				t.Fatal("a job was never handled")
			}
		}
	})
	if got["total"] != "100 by settle-a" {
		t.Fatalf("mirror %v: without the target's gate A's late job should have overwritten B's total; the control cannot fail", got)
	}
}

func TestUnackedDeliveryReplayedAndRepublishDeduplicated(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b)
			var first *gate.Job
			e.consume(300*time.Millisecond, func(msg jetstream.Msg) {
				md, err := msg.Metadata()
				if err == nil && md.NumDelivered == 1 {
					e.consumer.Apply(e.ctx, msg.Data()) // applied, then the consumer dies: no ack
					return
				}
				e.consumer.Handle(msg)
			})
			la, err := e.reg.Acquire(e.ctx, e.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
			if err != nil {
				t.Fatal(err)
			}
			e.write(la, clienttest.OwnerA, 1, "total", "100")
			e.waitOutcomes(gate.Replayed, "1/1")
			e.mu.Lock()
			o, calls := e.outcomes["1/1"], e.calls["1/1"]
			e.mu.Unlock()
			if len(o) != 2 || o[0] != gate.Accepted || calls != 1 {
				t.Fatalf("outcomes %v, handler calls %d: want ACCEPTED then REPLAYED, one call", o, calls)
			}
			// The relay publishing the same job again (it died after the
			// stream's ack, before River's) is a duplicate to the stream.
			info, err := e.js.Stream(e.ctx, "FENCEGATE_JOBS")
			if err != nil {
				t.Fatal(err)
			}
			msg, err := info.GetLastMsgForSubject(e.ctx, jshop.Subject(hop))
			if err != nil {
				t.Fatal(err)
			}
			var a riverhop.Args
			if err := json.Unmarshal(msg.Data, &a); err != nil {
				t.Fatal(err)
			}
			if first, err = gate.DecodeJob(a.Job); err != nil {
				t.Fatal(err)
			}
			ack, err := e.relay.Publish(e.ctx, first, a)
			if err != nil || !ack.Duplicate {
				t.Fatalf("republish: %+v %v, want a duplicate", ack, err)
			}
		})
	}
}
