package negative

import (
	"context"

	"github.com/fencegate/fencegate/registry"
)

// setSplitStore is the set-split control: a registry store that applies
// a lock set's write member by member, each member its own commit (the
// first with the write's settings compare, request entries and sweeps),
// as a client taking several locks in a loop does. Each commit compares
// its own member; when one fails, those before it stay written and the
// write answers with the failed compare and every member as it now is.
// The lock-set rounds then count a set's members granted at different
// revisions, and a set holding some members while not others
// (sim.LockSetCounts.SetPartial).
func setSplitStore(s registry.Store) registry.Store { return &setSplit{s} }

type setSplit struct{ registry.Store }

func (s *setSplit) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if len(w.Members) < 2 {
		return s.Store.Commit(ctx, w)
	}
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	var first uint64
	for i, m := range w.Members {
		one := registry.Write{Members: []registry.MemberWrite{m}}
		if i == 0 {
			one.SettingsRev, one.Settings, one.SettingsWas = w.SettingsRev, w.Settings, w.SettingsWas
			one.Requests, one.Sweeps = w.Requests, w.Sweeps
		}
		res, err := s.Store.Commit(ctx, one)
		if err != nil {
			return res, err
		}
		if !res.OK {
			cur, err := s.Store.ReadSet(ctx, names, w.ReadKeys)
			return registry.CommitResult{Current: cur}, err
		}
		if i == 0 {
			first = res.Revision
		}
	}
	return registry.CommitResult{OK: true, Revision: first}, nil
}
