//go:build unix

// This file is the story the demo tells, once fenced and once lease-only,
// and the verdict on the two runs.

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencegate/fencegate/demo/ledger"
)

// storyResult is what one run of the story left in the ledger.
type storyResult struct {
	aOutcome string // the outcome of A's late write
	aReason  string
	final    ledger.Value
	bValue   string
}

// story is the spec's first paragraph with real processes.
func (d *demo) story(ctx context.Context, ledgerURL, resource string, leaseOnly bool) (storyResult, error) {
	aValue, bValue := "100 (computed by A before its pause)", "200 (computed by B)"
	a, err := d.startWorker(ctx, "A", ledgerURL, resource, aValue, d.ttlMs, leaseOnly, true)
	if err != nil {
		return storyResult{}, err
	}
	if _, err := a.waitEvent(ctx, "ready"); err != nil {
		return storyResult{}, err
	}
	if err := a.freeze(); err != nil {
		return storyResult{}, err
	}
	frozen := time.Now()
	d.say("demo", fmt.Sprintf("SIGSTOP worker A (pid %d): frozen with its write in hand; its %s lease runs out", a.Pid(), msDuration(d.ttlMs)))
	// B queues for the lease. Its TTL is the registry default's, not A's:
	// the client counts a lease from when the acquire was sent, so with a
	// TTL shorter than the wait B's new lease would start out uncertain
	// (the worker copes, see ledger.CertainWaitMax, but the story is
	// clearer without it).
	b, err := d.startWorker(ctx, "B", ledgerURL, resource, bValue, demoTTLMsSuccessor, leaseOnly, false)
	if err != nil {
		return storyResult{}, err
	}
	bDone, err := b.waitEvent(ctx, "done")
	if err != nil {
		return storyResult{}, err
	}
	if err := a.thaw(); err != nil {
		return storyResult{}, err
	}
	d.say("demo", fmt.Sprintf("SIGCONT worker A after %.1fs frozen: it sends the write it built before the pause", time.Since(frozen).Seconds()))
	res := storyResult{bValue: bValue}
	for {
		e, err := a.waitEvent(ctx, "rejected", "accepted", "done")
		if err != nil {
			return storyResult{}, err
		}
		if e.Kind == "done" {
			break
		}
		res.aOutcome, res.aReason = e.Outcome, e.Reason
	}
	lc := &ledger.Client{Base: ledgerURL, Token: d.tokens["worker-a"]}
	v, _, err := lc.Value(ctx, demoKey)
	if err != nil {
		return storyResult{}, err
	}
	res.final = v
	fence := fmt.Sprintf("fence %d", v.Fence)
	if v.Fence == 0 {
		fence = "no fence"
	}
	d.say("ledger", fmt.Sprintf("%s = %q (writer %s, %s)", demoKey, v.Value, v.Writer, fence))
	if !leaseOnly {
		return res, d.showReceipts(ctx, lc, resource, "settle-b", bDone.Fence)
	}
	return res, nil
}

// showReceipts prints the ledger's receipts for one operation: the record,
// written in the same transaction as the change, that it happened.
func (d *demo) showReceipts(ctx context.Context, lc *ledger.Client, resource, op string, fence uint64) error {
	ans, err := lc.QueryOperation(ctx, resource, op, fence)
	if err != nil {
		return err
	}
	d.say("ledger", fmt.Sprintf("receipts for operation %s: %s", op, ans.Verdict))
	for _, r := range ans.Receipts {
		d.say("ledger", fmt.Sprintf("  receipt %s: fence %d segment %d, payload %s, accepted %s (%s)",
			r.ID(), r.FenceToken, r.SegmentSeq, r.PayloadDigest.String()[:19]+"…", r.AcceptedAt.UTC().Format("15:04:05.000Z"), r.Mode))
	}
	return nil
}

func (d *demo) startWorker(ctx context.Context, name, ledgerURL, resource, value string, ttlMs uint64, leaseOnly, hold bool) (*child, error) {
	id := "worker-" + strings.ToLower(name)
	args := []string{"demo", "worker", "--name", name, "--registry", d.registry, "--ledger", ledgerURL,
		"--token", d.tokens[id], "--resource", resource, "--op", "settle-" + strings.ToLower(name),
		"--ttl-ms", fmt.Sprint(ttlMs), "--wait-ms", "15000"}
	if !hold { // B settles in two ordered segments: the rows, then the total
		args = append(args, "--set", demoRowsKey+"=1000 rows settled by "+name, "--segments", "2")
	}
	args = append(args, "--set", demoKey+"="+value)
	if leaseOnly {
		args = append(args, "--lease-only")
	}
	if hold {
		args = append(args, "--hold")
	}
	return d.spawn(ctx, "worker "+name, hold, args...)
}

func (d *demo) verdict(fenced, unsafe storyResult) error {
	d.banner("RESULT")
	keptB := fenced.final.Value == fenced.bValue
	lostB := unsafe.final.Value != unsafe.bValue
	fmt.Fprintf(d.out, "fenced:     worker A's late write: %s: %s\n", fenced.aOutcome, fenced.aReason)
	fmt.Fprintf(d.out, "fenced:     ledger keeps %q by %s (fence %d): B's result intact=%t\n", fenced.final.Value, fenced.final.Writer, fenced.final.Fence, keptB)
	landed := "did not land"
	if unsafe.aOutcome == "ACCEPTED" {
		landed = "landed"
	}
	fmt.Fprintf(d.out, "lease-only: worker A's late write %s (nothing checked it)\n", landed)
	fmt.Fprintf(d.out, "lease-only: ledger holds %q by %s: B's result overwritten=%t\n", unsafe.final.Value, unsafe.final.Writer, lostB)
	if keptB && lostB && fenced.aOutcome == "STALE_OWNER" {
		fmt.Fprintf(d.out, "VERDICT: PASS in %.1fs: the gate rejected the stale owner and kept B's result; lease-only protection lost it\n", time.Since(d.start).Seconds())
		return nil
	}
	fmt.Fprintln(d.out, "VERDICT: FAIL")
	return errors.New("the demo did not show the expected outcome (see above)")
}
