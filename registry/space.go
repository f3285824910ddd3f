package registry

// SpaceStatus is what a store engine reports of its space, for metrics
// and the dashboard: on etcd, the member nearest its quota
// (etcdstore.Space).
type SpaceStatus struct {
	SizeBytes  int64 // the backend file, free pages included
	InUseBytes int64 // what is in use after compaction
	QuotaBytes int64 // the engine's quota; 0: not known
	// NoSpace: the engine's own alarm is raised (etcd NOSPACE): it takes
	// reads and deletes only.
	NoSpace bool
	// Low: new grants are refused (wire.ErrStoreFull), from the
	// high-water mark under the quota until space is back.
	Low bool
	// Defrags counts the defragmentations run; DefragSeconds is how long
	// the last one blocked the member.
	Defrags       uint64
	DefragSeconds float64
}

// CreatesEntries reports whether w writes a request entry its compare
// says is absent: a grant, which a store out of space may refuse unsent
// (Store, "A store out of space").
func CreatesEntries(w Write) bool {
	for _, rw := range w.Requests {
		if rw.Entry != nil && rw.Compare && rw.ModRev == 0 {
			return true
		}
	}
	return false
}
