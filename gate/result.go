package gate

// Result is what an adapter's Apply returns for decision d on mutation m:
// for ACCEPTED the new receipt and nil; for REPLAYED the original receipt
// and the REPLAYED rejection (IsSuccess is true); when shadow mode let a
// rejected mutation through, an unstored receipt whose Outcome is the
// would-be rejection and nil; otherwise a zero receipt and the rejection.
func (d Decision) Result(m *Mutation) (Receipt, error) {
	switch {
	case d.Outcome == Accepted || d.Outcome == Replayed:
		return d.Receipt, d.Err
	case d.Proceed: // shadow mode let it through
		return Receipt{Resource: m.Resource, FenceToken: m.FenceToken, OperationID: m.OperationID,
			SegmentSeq: m.SegmentSeq, PayloadDigest: m.PayloadDigest, Mode: ModeShadow, Outcome: d.Outcome}, nil
	}
	return Receipt{}, d.Err
}
