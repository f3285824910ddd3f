package lockstate

// Limits is what the decisions read of the registry's configuration:
// its issuer epoch, the form of the grants it issues and its named
// limits, all in milliseconds of the registry clock. The shell builds it
// from registry.Config, which documents each field's default and checks
// them against each other; a decision takes it as it is.
type Limits struct {
	// IssuerEpoch is the epoch this registry issues grants under; a
	// registry whose epoch is revoked grants nothing.
	IssuerEpoch uint64
	// SeparateStatus: a fresh grant is the earlier form, without its own
	// HELD statement (heldUntil 0).
	SeparateStatus bool

	// TTLMsMin, TTLMsMax bound an acquire's TTL; TTLMsDefault is used
	// when it asks for 0.
	TTLMsMin, TTLMsMax, TTLMsDefault uint64
	// LockDelayMs: how long a resource stays ungrantable after a lease
	// expires (never after a release).
	LockDelayMs uint64
	// ClockSkewMaxMs bounds the clocks' disagreement over one lease: a
	// HELD statement ends this long before the lease's expiry.
	ClockSkewMaxMs uint64
	// StatusProofTTLMs is the longest life of a status proof.
	StatusProofTTLMs uint64

	// WaitersPerResourceMax bounds a resource's queue.
	WaitersPerResourceMax int
	// WaitMsMax caps an acquire's wait.
	WaitMsMax uint64
	// HandoffClaimMs is how long the head waiter of a free resource has
	// to claim it before it is presumed gone.
	HandoffClaimMs uint64
	// WaiterGraceMs is how long a ticket keeps its place after its wait
	// ended.
	WaiterGraceMs uint64
	// RequestRetentionMs is how long a request entry is kept after its
	// lease ended.
	RequestRetentionMs uint64
}
