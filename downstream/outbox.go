// Package downstream carries a fenced write's authority past its first
// hop. An accepted write hands follow-up work to asynchronous workers in
// its own transaction (the transactional outbox): each job carries the
// upstream fence, operation, segment and receipt, and a job sequence
// numbered here, so the worker applies the job's effect through a gate of
// its own (sqlgate.Gate.ApplyJob) where a superseded owner's job is
// STALE_OWNER. Applier applies a delivered job for any transport;
// transports live in sub-packages (riverhop: River; jshop: NATS JetStream,
// relayed from River); calls to third-party HTTP APIs under a grant are
// httpcall's.
//
// # Job sequences
//
// A target accepts the jobs of one fence in order, 1, 2, 3, … (a gap
// waits for the missing job), as a resource accepts segments. NewJob
// numbers them densely across the segments of the fence, with a counter
// row per (resource, fence, target) in the upstream database, written in
// the accepting transaction: the upstream fence row is locked meanwhile,
// so two accepts never draw one number, and a rolled-back write returns
// its numbers with everything else.
package downstream

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// ErrNotAccepting is returned by NewJob outside an accepting business
// function: outside Apply/Run, or for a rejected write that shadow mode
// lets through (it has no receipt, so a job could not prove it).
var ErrNotAccepting = errors.New("downstream: no accepted write in this context: a job is enqueued only by an accepting business function")

// ErrChainedJob is returned by NewJob under ApplyJob: a job's effect may
// not hand off another job (its grant binds the first resource only).
var ErrChainedJob = errors.New("downstream: a job's effect cannot enqueue further fenced jobs")

// Sequencer numbers jobs in the upstream database and builds them.
type Sequencer struct {
	dialect *sqlgate.Dialect
	prefix  string
	next    string
}

// NewSequencer returns a sequencer whose counter table is
// prefix+"job_seq" (prefix "" means sqlgate.PrefixDefault).
func NewSequencer(d *sqlgate.Dialect, prefix string) (*Sequencer, error) {
	if d == nil {
		return nil, errors.New("downstream: a dialect is required")
	}
	if prefix == "" {
		prefix = sqlgate.PrefixDefault
	}
	if strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(prefix) > 48 {
		return nil, fmt.Errorf("downstream: prefix %q: want [a-z0-9_]{0,48}", prefix)
	}
	s := &Sequencer{dialect: d, prefix: prefix}
	s.next = s.q(`INSERT INTO {p}job_seq (resource, fence, target, last_job_seq) VALUES ($1, $2, $3, 1)
ON CONFLICT (resource, fence, target) DO UPDATE SET last_job_seq = {p}job_seq.last_job_seq + 1 RETURNING last_job_seq`)
	return s, nil
}

func (s *Sequencer) q(query string) string {
	query = strings.ReplaceAll(query, "{p}", s.prefix)
	if s.dialect.Name() == "sqlite" {
		for i := 3; i >= 1; i-- {
			query = strings.ReplaceAll(query, fmt.Sprintf("$%d", i), "?")
		}
	}
	return query
}

// Migrate creates the counter table if it is missing.
func (s *Sequencer) Migrate(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, s.q(`CREATE TABLE IF NOT EXISTS {p}job_seq (
  resource TEXT NOT NULL, fence BIGINT NOT NULL, target TEXT NOT NULL, last_job_seq BIGINT NOT NULL,
  PRIMARY KEY (resource, fence, target))`))
	if err != nil {
		return fmt.Errorf("downstream: migrate: %w", err)
	}
	return nil
}

// NewJob builds the job of hop whose payload is payload, for the accept
// that the business function running with ctx and tx is part of: the
// accepted envelope's resource, operation, fence and segment, the receipt
// the accept stores, and the next job sequence for the target. It must be
// called in that business function with its transaction (the job is only
// real if the write commits); a transport then enqueues the job in tx.
func (s *Sequencer) NewJob(ctx context.Context, tx *sql.Tx, hop string, payload []byte) (*gate.Job, error) {
	a, ok := sqlgate.AcceptingFrom(ctx)
	switch {
	case !ok:
		return nil, ErrNotAccepting
	case a.Job != nil:
		return nil, ErrChainedJob
	}
	m := &a.Verified.Mutation
	target, err := gate.JobTarget(m.Resource, hop)
	if err != nil {
		return nil, err
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, s.next, m.Resource, int64(m.FenceToken), target).Scan(&seq); err != nil {
		return nil, fmt.Errorf("downstream: number job for %s: %w", target, err)
	}
	return &gate.Job{Target: target, Resource: m.Resource, OperationID: m.OperationID, FenceToken: m.FenceToken,
		SegmentSeq: m.SegmentSeq, JobSeq: uint64(seq), PayloadDigest: PayloadDigest(payload),
		UpstreamReceipt: a.Receipt.Digest(), Grant: m.Grant, GrantProof: m.GrantProof}, nil
}

// PayloadDigest is the digest a job's payload is identified by.
func PayloadDigest(payload []byte) grant.Digest { return sha256.Sum256(payload) }
