// Package jshop is NATS JetStream as a second transport of fenced jobs,
// for a target in another service. A stream cannot join a SQL
// transaction, so the hand-off stays River's: the accepted write enqueues
// the job with riverhop.Outbox in its own transaction, and Relay, the
// upstream service's River worker of fenced jobs, publishes it to
// JetStream (at least once: River retries until the stream acknowledges).
// The other service consumes the stream and applies each message through
// its target's gate (Consumer): a superseded owner's job is STALE_OWNER
// and terminated, a redelivery of an applied one is REPLAYED and
// acknowledged without running the effect again.
//
// A message's ID (Nats-Msg-Id) is the job's (target, fence, job
// sequence), so a relay that publishes twice (it crashed after the
// stream's acknowledgement, before River's) is deduplicated by the
// stream within its duplicate window, and by the target's receipts
// beyond it.
package jshop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
)

// SubjectPrefix starts every subject jobs are published on: the hop
// follows, e.g. "fencegate.jobs.mirror".
const SubjectPrefix = "fencegate.jobs."

// Subject returns the subject of hop's jobs.
func Subject(hop string) string { return SubjectPrefix + hop }

// MsgID is the message ID of job j: stable across republishes.
func MsgID(j *gate.Job) string { return fmt.Sprintf("%s/%d/%d", j.Target, j.FenceToken, j.JobSeq) }

// Relay is the upstream service's River worker of fenced jobs when their
// target is reached over JetStream: it publishes each job to
// Subject(hop) and completes once the stream has stored it.
type Relay struct {
	river.WorkerDefaults[riverhop.Args]
	// JS is the JetStream context. Required; a stream must cover
	// SubjectPrefix+">".
	JS jetstream.JetStream
}

// Work publishes the job; a job that does not decode is cancelled, a
// failed publish is retried by River.
func (r *Relay) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	j, err := gate.DecodeJob(job.Args.Job)
	if err != nil {
		return river.JobCancel(err)
	}
	_, err = r.Publish(ctx, j, job.Args)
	return err
}

// Publish publishes one job's arguments under MsgID(j).
func (r *Relay) Publish(ctx context.Context, j *gate.Job, a riverhop.Args) (*jetstream.PubAck, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("jshop: encode job: %w", err)
	}
	ack, err := r.JS.Publish(ctx, Subject(a.Hop), data, jetstream.WithMsgID(MsgID(j)))
	if err != nil {
		return nil, fmt.Errorf("jshop: publish %s: %w", MsgID(j), err)
	}
	return ack, nil
}

// ApplyTimeoutDefault bounds one message's apply when
// Consumer.ApplyTimeout is zero.
const ApplyTimeoutDefault = 30 * time.Second

// GapDelayDefault is how long a message waits when its predecessor has
// not been applied (SEGMENT_GAP).
const GapDelayDefault = 100 * time.Millisecond

// Consumer applies JetStream messages of fenced jobs through the target's
// gate. Use an explicit-ack consumer: Handle acknowledges a job that
// stands (ACCEPTED or REPLAYED), delays one whose predecessor is missing,
// terminates one that can never apply (STALE_OWNER, no upstream receipt,
// a bad proof, …), and leaves an unknown outcome to redelivery (Nak).
type Consumer struct {
	downstream.Applier
	// ApplyTimeout bounds one apply. Optional, defaults to
	// ApplyTimeoutDefault.
	ApplyTimeout time.Duration
	// GapDelay, optional, defaults to GapDelayDefault.
	GapDelay time.Duration
}

// Handle is a jetstream.MessageHandler: cons.Consume(c.Handle).
func (c *Consumer) Handle(msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), or(c.ApplyTimeout, ApplyTimeoutDefault))
	defer cancel()
	err := c.Apply(ctx, msg.Data())
	switch downstream.DispositionOf(err) {
	case downstream.Done:
		msg.Ack()
	case downstream.Later:
		msg.NakWithDelay(or(c.GapDelay, GapDelayDefault))
	case downstream.Drop:
		msg.TermWithReason(err.Error())
	default:
		msg.Nak()
	}
}

// ErrBadMessage is the error of a message that is not a job's arguments.
var ErrBadMessage = errors.New("jshop: message is not a fenced job")

// Apply decodes one message and applies it (downstream.Applier.Apply).
func (c *Consumer) Apply(ctx context.Context, data []byte) error {
	var a riverhop.Args
	if err := json.Unmarshal(data, &a); err != nil {
		return &gate.Rejection{Outcome: gate.Malformed, Reason: ErrBadMessage.Error() + ": " + err.Error(), Cause: ErrBadMessage}
	}
	_, err := c.Applier.Apply(ctx, a.Hop, a.Job, a.Payload)
	return err
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
