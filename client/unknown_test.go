// This file proves Unknown.Judge, the Resolver's pure decision, case by
// case: what the resource's answer about an operation says of one write
// whose outcome was unknown.
package client_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

func TestUnknownJudge(t *testing.T) {
	p1, p2 := grant.Digest{1}, grant.Digest{2}
	rc := func(fence, seq uint64, p grant.Digest) gate.Receipt {
		return gate.Receipt{FenceToken: fence, SegmentSeq: seq, PayloadDigest: p, Outcome: gate.Accepted}
	}
	for _, tc := range []struct {
		name     string
		u        client.Unknown
		a        gate.Answer
		want     gate.Verdict
		wantSeq  uint64 // the receipt returned (0: none)
		wantFail bool
	}{
		{"segment accepted", client.Unknown{FenceToken: 3, SegmentSeq: 2, PayloadDigest: p1},
			gate.Judge([]gate.Receipt{rc(3, 1, p2), rc(3, 2, p1)}, 3, 3), gate.VerdictAccepted, 2, false},
		{"any payload when none is named", client.Unknown{FenceToken: 3, SegmentSeq: 2},
			gate.Judge([]gate.Receipt{rc(3, 2, p1)}, 3, 3), gate.VerdictAccepted, 2, false},
		{"an earlier segment's receipt, fence passed: absent", client.Unknown{FenceToken: 3, SegmentSeq: 2, PayloadDigest: p1},
			gate.Judge([]gate.Receipt{rc(3, 1, p1)}, 4, 3), gate.VerdictProvenAbsent, 0, false},
		{"an earlier segment's receipt, fence not passed: undetermined", client.Unknown{FenceToken: 3, SegmentSeq: 2, PayloadDigest: p1},
			gate.Judge([]gate.Receipt{rc(3, 1, p1)}, 3, 3), gate.VerdictUndetermined, 0, false},
		{"the same segment under another fence does not count", client.Unknown{FenceToken: 3, SegmentSeq: 1, PayloadDigest: p1},
			gate.Judge([]gate.Receipt{rc(5, 1, p1)}, 5, 3), gate.VerdictProvenAbsent, 0, false},
		{"another payload: the resource contradicts the write", client.Unknown{FenceToken: 3, SegmentSeq: 2, PayloadDigest: p1},
			gate.Judge([]gate.Receipt{rc(3, 2, p2)}, 3, 3), "", 0, true},
		{"whole operation: its verdict and last receipt", client.Unknown{FenceToken: 3},
			gate.Judge([]gate.Receipt{rc(3, 1, p1), rc(3, 2, p1)}, 4, 3), gate.VerdictAccepted, 2, false},
		{"whole operation, nothing, fence passed", client.Unknown{FenceToken: 3},
			gate.Judge(nil, 4, 3), gate.VerdictProvenAbsent, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.u.Judge(tc.a)
			if tc.wantFail {
				if !errors.Is(err, client.ErrBadAnswer) {
					t.Fatalf("want ErrBadAnswer, got %v (%s)", err, res.Verdict)
				}
				return
			}
			if err != nil || res.Verdict != tc.want {
				t.Fatalf("verdict %s (%v), want %s", res.Verdict, err, tc.want)
			}
			if got := res.Receipt; (got == nil) != (tc.wantSeq == 0) || got != nil && got.SegmentSeq != tc.wantSeq {
				t.Fatalf("receipt %+v, want segment %d", got, tc.wantSeq)
			}
		})
	}
}
