package sim

import (
	"github.com/fencegate/fencegate/gate"
)

// The downstream hop. A share of the main resource's accepted writes hand
// a follow-up job to an asynchronous worker in the same step (the
// transactional outbox: the simulated resource commits the accept and the
// job together); the job travels the simulated network — late, duplicated
// or lost like any message — and the worker applies it at the job target
// through the adapter's own ApplyJob (gate.DecideJob: the upstream receipt
// is its authority, the target's fence order keeps a superseded owner's
// job out). The checker counts stale downstream effects (a job applied
// after a job of a higher fence) and duplicate effects (one job applied
// twice), each required to be 0.

const (
	hopName       = "effects"
	jobShare      = 0.3 // share of accepted writes that hand off a job
	jobRetryMs    = 200 // a job whose predecessor has not landed yet (SEGMENT_GAP) is run again after this
	jobAttemptMax = 20  // then the worker gives up on it (its upstream owner was superseded meanwhile, say)
)

// handOff enqueues the job of accepted write m (receipt rc), numbered per
// fence, with probability jobShare.
func (w *world) handOff(m *gate.Mutation, rc gate.Receipt) {
	if !w.rng.chance(jobShare) {
		return
	}
	target, err := gate.JobTarget(m.Resource, hopName)
	if err != nil {
		panic("sim: job target: " + err.Error())
	}
	w.jobSeq[m.FenceToken]++
	j := &gate.Job{Target: target, Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, JobSeq: w.jobSeq[m.FenceToken], PayloadDigest: payloadDigest(m.OperationID, m.SegmentSeq, 7),
		UpstreamReceipt: rc.Digest(), Grant: m.Grant, GrantProof: m.GrantProof}
	w.counts.JobsHandedOff++
	w.deliverJob(j, 1)
}

// deliverJob carries j to the worker over the network.
func (w *world) deliverJob(j *gate.Job, attempt int) {
	w.send(pGate, pGate, msgJob, func() { w.runJob(j, attempt) })
}

// runJob is the worker applying j at its target.
func (w *world) runJob(j *gate.Job, attempt int) {
	ran := false
	var out gate.Outcome
	if w.ungatedJobs() {
		ran, out = true, gate.Accepted // the bug: the worker applies whatever it is handed
	} else {
		rc, err := w.res.g.applyJob(hopName, j, func() { ran = true })
		out = gate.OutcomeOf(err)
		if err == nil {
			out = rc.Outcome
		}
	}
	w.chk.jobDecided(j, out, ran)
	w.mix(uint64(msgJob), j.FenceToken, j.JobSeq, uint64(outcomeIndex(out)))
	w.tracef("job %s fence %d job %d: %s", j.Target, j.FenceToken, j.JobSeq, out)
	if out == gate.SegmentGap && attempt < jobAttemptMax {
		w.after(jobRetryMs, func() { w.runJob(j, attempt+1) })
	}
}

// jobDecided classifies one job decision at the target.
func (k *checker) jobDecided(j *gate.Job, out gate.Outcome, applied bool) {
	c := k.c
	if !applied {
		return
	}
	c.JobsApplied++
	key := [2]uint64{j.FenceToken, j.JobSeq}
	if k.jobsDone[key] {
		c.DuplicateEffects++
		k.violate("duplicate-effect", "job %d of fence %d applied twice at %s", j.JobSeq, j.FenceToken, j.Target)
	}
	if j.FenceToken < k.jobFenceMax {
		c.StaleDownstream++
		k.violate("stale-downstream", "job %d of fence %d applied at %s after a job of fence %d", j.JobSeq, j.FenceToken, j.Target, k.jobFenceMax)
	}
	k.jobsDone[key] = true
	k.jobFenceMax = max(k.jobFenceMax, j.FenceToken)
}
