package adapt

import "github.com/fencegate/fencegate/gate"

// Result is what an adapter's Apply returns for decision d on mutation m:
// for ACCEPTED the new receipt and nil; for REPLAYED the original receipt
// and the REPLAYED rejection (gate.IsSuccess is true); when shadow mode
// let a rejected mutation through, an unstored receipt whose Outcome is
// the would-be rejection and nil; otherwise a zero receipt and the
// rejection.
func Result(d gate.Decision, m *gate.Mutation) (gate.Receipt, error) {
	switch {
	case d.Outcome == gate.Accepted || d.Outcome == gate.Replayed:
		return d.Receipt, d.Err
	case d.Proceed: // shadow mode let it through
		return gate.Receipt{Resource: m.Resource, FenceToken: m.FenceToken, OperationID: m.OperationID,
			SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest, Mode: gate.ModeShadow, Outcome: d.Outcome}, nil
	}
	return gate.Receipt{}, d.Err
}
