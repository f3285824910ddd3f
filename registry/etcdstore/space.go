package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// Space keeps watch on an etcd cluster's space, as its operators would:
// it polls every member's size, in-use size and quota, and the NOSPACE
// alarm; from a high-water mark under the quota it has the store refuse
// new grants (wire.ErrStoreFull, before etcd refuses every write), so
// renewals and releases go on; with Recover (the embedded member, whose
// operator serve is) it compacts, defragments and disarms NOSPACE itself
// once that brings the file under the quota, and grants resume. etcd
// keeps a write's space for reuse once compaction drops its history, so
// the file stays flat without a defragmentation; one is run only when
// the file nears its quota and holds enough free pages to matter, since
// it blocks the member while it copies the file (seconds per GiB).
type Space struct {
	c    *clientv3.Client
	opt  SpaceOptions
	low  atomic.Bool
	mu   sync.Mutex
	st   registry.SpaceStatus
	last time.Time // the last defragmentation's start
}

// SpaceOptions tunes a Space. Zero fields take the defaults beside them;
// NewSpace refuses a value outside the range beside it.
type SpaceOptions struct {
	// QuotaBytes is the quota when the members do not report theirs
	// (etcd before 3.6 does not). Optional: 0 leaves an unreported quota
	// unknown, and then only the NOSPACE alarm stops grants.
	QuotaBytes int64
	// HighWater: new grants are refused from this fraction of the quota,
	// SpaceHighWaterMin to SpaceHighWaterMax. Optional, defaults to 0.9.
	// LowWater: they resume below this one, SpaceLowWaterMin to
	// HighWater less SpaceWaterGapMin. Optional, defaults to 0.8.
	HighWater, LowWater float64
	// Interval between polls, SpaceIntervalMin to SpaceIntervalMax.
	// Optional, defaults to 5s.
	Interval time.Duration
	// DefragIntervalMin bounds how often Recover defragments, except
	// under NOSPACE; at most SpaceIntervalMax. Optional, defaults to 1
	// min.
	DefragIntervalMin time.Duration
	// Recover: compact, defragment and disarm NOSPACE (serve's embedded
	// member). Off for an external cluster, whose operators do it
	// (docs/operations.md).
	Recover bool
	// Logger receives a line at each change of state and each
	// maintenance step. Optional, defaults to none.
	Logger *slog.Logger
}

// Ranges of SpaceOptions. Above 95% of the quota one poll interval of
// writes, or one jump of the backend file as bbolt grows it, reaches
// etcd's own alarm before the guard sees it; under half of it the guard
// stops grants in a store that has room. The two marks stay 5 points
// apart so that the guard does not flap at one size.
const (
	SpaceHighWaterMin = 0.5
	SpaceHighWaterMax = 0.95
	SpaceLowWaterMin  = 0.25
	SpaceWaterGapMin  = 0.05
	SpaceIntervalMin  = 100 * time.Millisecond
	SpaceIntervalMax  = time.Hour
)

func (o SpaceOptions) withDefaults() (SpaceOptions, error) {
	if o.HighWater == 0 {
		o.HighWater = 0.9
	}
	if o.LowWater == 0 {
		o.LowWater = min(0.8, o.HighWater-SpaceWaterGapMin)
	}
	if o.Interval == 0 {
		o.Interval = 5 * time.Second
	}
	if o.DefragIntervalMin == 0 {
		o.DefragIntervalMin = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.QuotaBytes < 0:
		return o, fmt.Errorf("etcdstore: space quota %d bytes: want 0 (reported by the members) or more", o.QuotaBytes)
	case !(o.HighWater >= SpaceHighWaterMin && o.HighWater <= SpaceHighWaterMax):
		return o, fmt.Errorf("etcdstore: space high-water mark %v: want %v to %v of the quota", o.HighWater, SpaceHighWaterMin, SpaceHighWaterMax)
	case !(o.LowWater >= SpaceLowWaterMin && o.LowWater <= o.HighWater-SpaceWaterGapMin):
		return o, fmt.Errorf("etcdstore: space low-water mark %v: want %v to %.2f (the high-water mark less %v)", o.LowWater, SpaceLowWaterMin, o.HighWater-SpaceWaterGapMin, SpaceWaterGapMin)
	case o.Interval < SpaceIntervalMin || o.Interval > SpaceIntervalMax:
		return o, fmt.Errorf("etcdstore: space poll interval %v: want %v to %v", o.Interval, SpaceIntervalMin, SpaceIntervalMax)
	case o.DefragIntervalMin < 0 || o.DefragIntervalMin > SpaceIntervalMax:
		return o, fmt.Errorf("etcdstore: interval between defragmentations %v: want up to %v", o.DefragIntervalMin, SpaceIntervalMax)
	}
	return o, nil
}

// NewSpace returns a watch on c's cluster; Run starts it. Pass it to New
// (Store.GuardSpace) so the store refuses grants while space is low. It
// refuses options outside their ranges (SpaceOptions), naming the range.
func NewSpace(c *clientv3.Client, opt SpaceOptions) (*Space, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Space{c: c, opt: opt}, nil
}

// Low reports whether new grants are refused.
func (sp *Space) Low() bool { return sp != nil && sp.low.Load() }

// Status returns the last poll's view.
func (sp *Space) Status() registry.SpaceStatus {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := sp.st
	st.Low = sp.low.Load()
	return st
}

// Run polls (and, with Recover, maintains) until ctx ends. A failed poll
// is logged and leaves the last view. logger, when not nil, replaces the
// options' (serve builds its logger after the store).
func (sp *Space) Run(ctx context.Context, logger *slog.Logger) {
	if logger != nil {
		sp.opt.Logger = logger
	}
	for {
		if err := sp.Check(ctx); err != nil && ctx.Err() == nil {
			sp.opt.Logger.Warn("etcdstore: space check", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(sp.opt.Interval):
		}
	}
}

// Check polls once and, with Recover, maintains: what Run does every
// Interval.
func (sp *Space) Check(ctx context.Context) error {
	st, members, err := sp.poll(ctx)
	if err != nil {
		return err
	}
	sp.update(st)
	if !sp.opt.Recover || !sp.low.Load() {
		return nil
	}
	return sp.recover(ctx, st, members)
}

// Poll polls once and moves the grant guard, maintaining nothing.
func (sp *Space) Poll(ctx context.Context) error {
	st, _, err := sp.poll(ctx)
	if err == nil {
		sp.update(st)
	}
	return err
}

// poll reads every member's status and the alarms; the status kept is
// the member nearest its quota.
func (sp *Space) poll(ctx context.Context) (registry.SpaceStatus, []uint64, error) {
	var st registry.SpaceStatus
	var members []uint64
	worst := -1.0
	for _, ep := range sp.c.Endpoints() {
		resp, err := sp.c.Status(ctx, ep)
		if err != nil {
			return st, nil, fmt.Errorf("etcdstore: status of %s: %w", ep, err)
		}
		members = append(members, resp.Header.MemberId)
		quota := resp.DbSizeQuota
		if quota <= 0 {
			quota = sp.opt.QuotaBytes
		}
		ratio := 0.0
		if quota > 0 {
			ratio = float64(resp.DbSize) / float64(quota)
		}
		if ratio > worst {
			worst = ratio
			st.SizeBytes, st.InUseBytes, st.QuotaBytes = resp.DbSize, resp.DbSizeInUse, quota
		}
	}
	alarms, err := sp.c.AlarmList(ctx)
	if err != nil {
		return st, nil, fmt.Errorf("etcdstore: alarms: %w", err)
	}
	for _, a := range alarms.Alarms {
		st.NoSpace = st.NoSpace || a.Alarm == pb.AlarmType_NOSPACE
	}
	return st, members, nil
}

// update keeps st and moves the grant guard: low from the high-water mark
// (or NOSPACE) until under the low-water mark with no alarm.
func (sp *Space) update(st registry.SpaceStatus) {
	sp.mu.Lock()
	st.Defrags, st.DefragSeconds = sp.st.Defrags, sp.st.DefragSeconds
	sp.st = st
	sp.mu.Unlock()
	wasLow := sp.low.Load()
	low := guardLow(st, wasLow, sp.opt.HighWater, sp.opt.LowWater)
	if low == wasLow {
		return
	}
	sp.low.Store(low)
	attrs := []any{slog.Int64("size_bytes", st.SizeBytes), slog.Int64("in_use_bytes", st.InUseBytes),
		slog.Int64("quota_bytes", st.QuotaBytes), slog.Bool("nospace_alarm", st.NoSpace)}
	if low {
		sp.opt.Logger.Error("etcdstore: store space low: new grants refused (STORE_FULL) until space is back", attrs...)
	} else {
		sp.opt.Logger.Info("etcdstore: store space back: grants resume", attrs...)
	}
}

// guardLow decides whether new grants are refused after a poll that
// found st: under NOSPACE, from the high-water mark, and, once refused,
// until under the low-water mark. A quota not known stops grants only at
// NOSPACE.
func guardLow(st registry.SpaceStatus, wasLow bool, high, low float64) bool {
	over := func(f float64) bool { return st.QuotaBytes > 0 && float64(st.SizeBytes) >= f*float64(st.QuotaBytes) }
	return st.NoSpace || over(high) || wasLow && over(low)
}

// recover compacts and defragments when that frees enough, then disarms
// NOSPACE once the file is under the low-water mark.
func (sp *Space) recover(ctx context.Context, st registry.SpaceStatus, members []uint64) error {
	free := st.SizeBytes - st.InUseBytes
	due := st.NoSpace || time.Since(sp.last) >= sp.opt.DefragIntervalMin
	if due && (st.NoSpace || free >= st.SizeBytes/10) {
		if err := sp.compactAndDefrag(ctx, st); err != nil {
			return err
		}
		var err error
		if st, members, err = sp.poll(ctx); err != nil {
			return err
		}
		sp.update(st)
	}
	if !st.NoSpace || st.QuotaBytes > 0 && float64(st.SizeBytes) >= sp.opt.LowWater*float64(st.QuotaBytes) {
		return nil
	}
	for _, id := range members {
		if _, err := sp.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: id, Alarm: pb.AlarmType_NOSPACE}); err != nil {
			return fmt.Errorf("etcdstore: disarm NOSPACE: %w", err)
		}
	}
	sp.opt.Logger.Info("etcdstore: NOSPACE alarm disarmed", slog.Int64("size_bytes", st.SizeBytes), slog.Int64("quota_bytes", st.QuotaBytes))
	st, _, err := sp.poll(ctx)
	if err == nil {
		sp.update(st)
	}
	return err
}

// compactAndDefrag drops the history before the current revision and
// copies each member's file without its free pages.
func (sp *Space) compactAndDefrag(ctx context.Context, before registry.SpaceStatus) error {
	sp.last = time.Now()
	resp, err := sp.c.Get(ctx, "compact-probe", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcdstore: revision to compact at: %w", err)
	}
	if _, err := sp.c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcdstore: compact: %w", err)
	}
	for _, ep := range sp.c.Endpoints() {
		start := time.Now()
		if _, err := sp.c.Defragment(ctx, ep); err != nil {
			return fmt.Errorf("etcdstore: defragment %s: %w", ep, err)
		}
		took := time.Since(start)
		sp.mu.Lock()
		sp.st.Defrags++
		sp.st.DefragSeconds = took.Seconds()
		sp.mu.Unlock()
		sp.opt.Logger.Warn("etcdstore: defragmented (the member was blocked meanwhile)", slog.String("endpoint", ep),
			slog.Duration("took", took), slog.Int64("size_before_bytes", before.SizeBytes), slog.Int64("in_use_bytes", before.InUseBytes))
	}
	return nil
}

// spaceRunbook is where an operator reads what to do when the store is
// full.
const spaceRunbook = `compact, defragment and disarm NOSPACE, or raise the quota: docs/operations.md, "The store's size"`

// fullError reads an etcd NOSPACE as the registry's ErrStoreFull.
func fullError(err error) error {
	if errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace) {
		return fmt.Errorf("%w: %w (etcd's NOSPACE alarm: %s)", wire.ErrStoreFull, err, spaceRunbook)
	}
	return err
}

// describe names the space for an error message: size and quota.
func (sp *Space) describe() string {
	st := sp.Status()
	if st.NoSpace {
		return fmt.Sprintf("NOSPACE alarm, size %d bytes, quota %d", st.SizeBytes, st.QuotaBytes)
	}
	return fmt.Sprintf("size %d bytes of quota %d", st.SizeBytes, st.QuotaBytes)
}

// putsAnything reports whether w puts a record, settings, an entry or a
// sweep item: what etcd refuses under NOSPACE.
func putsAnything(w registry.Write) bool {
	if w.Record != nil || w.Settings != nil {
		return true
	}
	for _, m := range w.Members {
		if m.Record != nil {
			return true
		}
	}
	for _, rw := range w.Requests {
		if rw.Entry != nil {
			return true
		}
	}
	for _, sw := range w.Sweeps {
		if !sw.Delete {
			return true
		}
	}
	return false
}

// GuardSpace has s refuse new grants while sp says space is low
// (wire.ErrStoreFull), and send writes that only delete alone then. Call
// it before s is used; it returns s.
func (s *Store) GuardSpace(sp *Space) *Store {
	s.space = sp
	return s
}
