package gate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/fencegate/fencegate/grant"
)

// Named limits on a job envelope.
const (
	// HopBytesMax bounds a hop name (the last part of a job target).
	HopBytesMax = 32
	// hopSuffix ends every job target's last segment, so a target reads
	// as one and never equals its upstream resource.
	hopSuffix = ".jobs"
)

// ErrNoUpstreamReceipt is the cause of a job rejection whose upstream
// write has no matching receipt: the upstream gate never accepted the
// write that enqueued the job (a forged job, a job inserted outside an
// accepting Apply, or one written while the upstream let a rejected
// write through in shadow mode).
var ErrNoUpstreamReceipt = errors.New("gate: no upstream receipt for the job")

// Job is the envelope of a follow-up job that an accepted fenced write
// handed off in its own transaction (the transactional outbox). It carries
// the upstream write's fence, operation and segment, so the worker applies
// the job's effect through a gate of its own (DecideJob): the job target
// is a resource whose fence state follows the upstream resource's fences,
// and a job of a superseded owner is STALE_OWNER there.
//
// The job's authority is the upstream accept, not a lease: the worker may
// run it long after the owner's status proof expired. DecideJob accepts it
// when the grant is genuine, the upstream receipt named here exists, and
// the fence is not below the target's highestFence (see DecideJob).
type Job struct {
	// Target is the downstream resource: JobTarget(Resource, hop). Its
	// fences are Resource's, which is why a target follows exactly one
	// upstream resource.
	Target string
	// Resource, OperationID, FenceToken and SegmentSeq are the upstream
	// write's: the grant's resource, operation and fence, and the segment
	// whose accept enqueued the job.
	Resource    string
	OperationID string
	FenceToken  uint64
	SegmentSeq  uint64
	// JobSeq numbers the jobs for Target under FenceToken: 1, 2, 3, … in
	// the order the upstream accepts enqueued them (across segments). The
	// target accepts them in that order, as a resource accepts segments.
	JobSeq uint64
	// PayloadDigest identifies the job's own payload; a re-run must repeat it.
	PayloadDigest grant.Digest
	// UpstreamReceipt is the ID (Receipt.Digest) of the receipt the
	// upstream accept stored with the business change that enqueued the job.
	UpstreamReceipt grant.Digest
	// Grant and GrantProof are the upstream envelope's. A job carries no
	// status proof: its authority is the upstream receipt.
	Grant      []byte
	GrantProof string
}

// JobTarget returns the downstream resource that jobs of hop for the
// upstream resource apply to: resource + "/" + hop + ".jobs", e.g.
// "invoice-batch/2026-07-19/mail.jobs". A registry must not grant leases
// on such names: the target's fences come from its upstream resource.
func JobTarget(resource, hop string) (string, error) {
	if err := ValidateHop(hop); err != nil {
		return "", err
	}
	t := resource + "/" + hop + hopSuffix
	if err := grant.ValidateResource(t); err != nil {
		return "", fmt.Errorf("gate: job target of %q: %v", resource, err)
	}
	return t, nil
}

// ValidateHop reports whether hop is a hop name: 1 to HopBytesMax bytes of
// lower-case letters, digits, '-' and '_'.
func ValidateHop(hop string) error {
	if hop == "" || len(hop) > HopBytesMax {
		return fmt.Errorf("gate: hop %q: want 1..%d bytes", hop, HopBytesMax)
	}
	for i := 0; i < len(hop); i++ {
		if c := hop[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("gate: hop %q: character %q not allowed (a-z, 0-9, '-', '_')", hop, c)
		}
	}
	return nil
}

// Validate checks the job's own fields (not the grant). The error wraps
// ErrMalformed as a *Rejection.
func (j *Job) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &Rejection{Outcome: Malformed, Resource: j.Target, FenceToken: j.FenceToken, SegmentSeq: j.JobSeq,
			Reason: "job field " + field + ": " + fmt.Sprintf(format, args...)}
	}
	if err := grant.ValidateResource(j.Resource); err != nil {
		return bad("resource", "%v", err)
	}
	if err := grant.ValidateResource(j.Target); err != nil {
		return bad("target", "%v", err)
	}
	if err := grant.ValidateOperationID(j.OperationID); err != nil {
		return bad("operationId", "%v", err)
	}
	for _, c := range []struct {
		name string
		v    uint64
	}{{"fenceToken", j.FenceToken}, {"segmentSeq", j.SegmentSeq}, {"jobSeq", j.JobSeq}} {
		if c.v == 0 || c.v > CounterMax {
			return bad(c.name, "%d outside 1..%d", c.v, uint64(CounterMax))
		}
	}
	if j.PayloadDigest.IsZero() || j.UpstreamReceipt.IsZero() {
		return bad("digests", "payloadDigest and upstreamReceipt must be set")
	}
	if len(j.Grant) == 0 || len(j.Grant) > GrantBytesMax {
		return bad("grant", "%d bytes, want 1..%d", len(j.Grant), GrantBytesMax)
	}
	if j.GrantProof == "" || len(j.GrantProof) > ProofBytesMax {
		return bad("grantProof", "%d bytes, want 1..%d", len(j.GrantProof), ProofBytesMax)
	}
	return nil
}

// AuthenticateJob is Authenticate for a job, for a gate serving hop: the
// job is well formed, its target is JobTarget(job's resource, hop), its
// grant is genuine (proof and issuer epoch against the trust bundle, now)
// and binds the job's resource, operation root and fence, and the class is
// allowed. There is no identity step: the worker is not the grant's owner,
// and the owner's identity was checked when the upstream write was
// accepted, which the upstream receipt (DecideJob) proves. It reads no
// resource state.
//
// The Verified it returns describes the job as a write to the target:
// Mutation.Resource is the target, SegmentSeq the job sequence,
// PayloadDigest the job's; Root and GrantDigest are the upstream grant's.
func (p *Policy) AuthenticateJob(j *Job, hop string) (*Verified, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	rej := func(o Outcome, cause error, format string, args ...any) (*Verified, error) {
		return nil, &Rejection{Outcome: o, Resource: j.Target, FenceToken: j.FenceToken, SegmentSeq: j.JobSeq,
			Reason: fmt.Sprintf(format, args...), Cause: cause}
	}
	if want, err := JobTarget(j.Resource, hop); err != nil || want != j.Target {
		return rej(BindingMismatch, err, "job target %q is not hop %q of %q", j.Target, hop, j.Resource)
	}
	gd := grant.Digest(sha256.Sum256(j.Grant))
	g, err := p.grants.parse(gd, j.Grant, grant.ParseGrant)
	if err != nil {
		return rej(BadProof, err, "grant does not parse: %v", err)
	}
	if err := p.Verifier.VerifyDigest(grant.SchemaGrant, gd, g.IssuerEpoch, j.GrantProof); err != nil {
		return rej(proofOutcome(err), err, "grant proof: %v", err)
	}
	root := grant.OperationRoot(j.Resource, j.OperationID)
	switch {
	case ReaderResource(g.Resource):
		return rej(ReadGrant, nil, "grant on %s is a read/write lock reader's: only a writer's grant may start a job", g.Resource)
	case j.Resource != g.Resource || root != g.OperationRoot || j.FenceToken != g.FenceToken:
		return rej(BindingMismatch, nil, "job (%s, %s, fence %d) does not match its grant (%s, root %s, fence %d)",
			j.Resource, j.OperationID, j.FenceToken, g.Resource, g.OperationRoot, g.FenceToken)
	case len(p.OperationClasses) > 0 && !slices.Contains(p.OperationClasses, g.OperationClass):
		return rej(BindingMismatch, nil, "operation class %q not allowed by this gate", g.OperationClass)
	}
	m := Mutation{Resource: j.Target, Lease: g.Lease, OperationID: j.OperationID, FenceToken: j.FenceToken,
		SegmentSeq: j.JobSeq, PayloadDigest: j.PayloadDigest, Grant: j.Grant, GrantProof: j.GrantProof}
	return &Verified{Mutation: m, Grant: g, GrantDigest: gd, Root: root}, nil
}
