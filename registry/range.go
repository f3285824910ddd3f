package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// bumpWaitMsMax bounds how long a bump waits for the clock to pass its
// generation, 2.5 s: a generation taken from the clock is passed within
// a second plus the skew bound; one further ahead (an --above, or a clock
// that went back) is reported rather than waited for.
const bumpWaitMsMax = 2500

func rangeOf(set lockstate.Settings, rev uint64) wire.FenceRange {
	first, last := lockstate.FenceRangeOf(set.FenceGeneration)
	fr := wire.FenceRange{Generation: set.FenceGeneration, First: first, Last: last, Revision: rev}
	if set.FenceBumpedAtMs != 0 {
		at := fromMs(set.FenceBumpedAtMs)
		fr.BumpedAt = &at
	}
	return fr
}

// FenceRange reads the fence range linearizably.
func (r *Registry) FenceRange(ctx context.Context) (wire.FenceRange, error) {
	s, err := r.read(ctx, "", nil)
	if err != nil {
		return wire.FenceRange{}, err
	}
	return rangeOf(s.Settings, s.Revision), nil
}

// ReadFenceRange reads store's fence range directly, with no registry
// running on it.
func ReadFenceRange(ctx context.Context, store Store) (wire.FenceRange, error) {
	s, err := store.Read(ctx, "", nil)
	if err != nil {
		return wire.FenceRange{}, storeError("read", err)
	}
	return rangeOf(s.Settings, s.Revision), nil
}

// BumpFenceRange moves the registry's fence range above every fence any
// earlier store or range issued (lockstate.DecideBump): from its commit
// on, every resource's next fence is above generation<<32, and every
// lease granted before it has ended (its renewals answer ErrLeaseBroken,
// its status is EXPIRED; the fence, not a lock-delay, keeps its writes
// out). No
// per-resource write is needed: every replica's next write compares the
// settings' revision and decides again on the new range.
//
// above, when not 0, is a fence the new range must exceed (the highest
// fence a gate reports). When the generation came from the clock, the
// bump returns only once the clock has passed that second by the skew
// bound, so a later bump anywhere (clocks in bound) takes a higher one.
func (r *Registry) BumpFenceRange(ctx context.Context, above uint64) (wire.FenceRange, error) {
	var out lockstate.Settings
	_, rev, err := r.casLoop(ctx, "", nil, false, func(s *Snapshot, now int64) (*Write, error) {
		next, err := lockstate.DecideBump(s.Settings, lockstate.BumpInput{NowMs: now, Above: above, Seen: r.generationSeen()})
		if err != nil {
			return nil, err
		}
		out = next
		return &Write{SettingsRev: s.SettingsRev, Settings: &next}, nil
	})
	if err != nil {
		return wire.FenceRange{}, err
	}
	fr := rangeOf(out, rev)
	fr.AheadOfClockMs, err = waitForGeneration(ctx, r.clock, fr.Generation, r.cfg.ClockSkewMaxMs)
	return fr, err
}

// BumpFenceRange is the bump done on a store directly, with no registry
// running on it (fencegate fence-range bump with the store's flags): after
// a restore, before serve starts, as etcdutl's --bump-revision is done
// before etcd starts. It retries a failed compare up to retriesMax times
// and waits for the clock as Registry.BumpFenceRange does.
func BumpFenceRange(ctx context.Context, store Store, clk clock.Clock, above, skewMaxMs uint64) (wire.FenceRange, error) {
	const retriesMax = 32
	s, err := store.Read(ctx, "", nil)
	for try := 0; err == nil; try++ {
		next, derr := lockstate.DecideBump(s.Settings, lockstate.BumpInput{NowMs: toMs(clk.Now()), Above: above})
		if derr != nil {
			return wire.FenceRange{}, derr
		}
		w := Write{SettingsRev: s.SettingsRev, Settings: &next}
		bindDecidedOn(&w, &s)
		res, cerr := store.Commit(ctx, w)
		switch {
		case cerr != nil:
			return wire.FenceRange{}, storeError("commit", cerr)
		case res.OK:
			fr := rangeOf(next, res.Revision)
			fr.AheadOfClockMs, err = waitForGeneration(ctx, clk, fr.Generation, skewMaxMs)
			return fr, err
		case try >= retriesMax:
			return wire.FenceRange{}, fmt.Errorf("%w: fence range bump: %d compare-and-swap retries", wire.ErrConflict, try)
		}
		s = res.Current
	}
	return wire.FenceRange{}, storeError("read", err)
}

// waitForGeneration waits until clk has passed the end of second gen by
// skewMaxMs, when that is at most bumpWaitMsMax away, and returns how far
// (ms) the generation is still ahead of the clock then (0 when passed).
func waitForGeneration(ctx context.Context, clk clock.Clock, gen, skewMaxMs uint64) (int64, error) {
	passAtMs := int64(gen+1)*1000 + int64(skewMaxMs)
	waitMs := passAtMs - toMs(clk.Now())
	if waitMs <= 0 {
		return 0, nil
	}
	if waitMs > bumpWaitMsMax+int64(skewMaxMs) {
		return waitMs - int64(skewMaxMs), nil
	}
	select {
	case <-ctx.Done():
		return 0, fmt.Errorf("registry: fence range bump committed (generation %d); waiting for the clock to pass it: %w", gen, ctx.Err())
	case <-clk.After(time.Duration(waitMs) * time.Millisecond):
		return 0, nil
	}
}

// generationSeen is the highest fence generation this Registry has read
// from its store.
func (r *Registry) generationSeen() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.genSeen
}

// checkGeneration refuses to sign under settings whose fence generation
// is below one this Registry has seen. Only a store that went back (a
// restore from before a bump) shows that to a decision that committed;
// a read that started before a bump and ended after it shows it too, but
// every grant such a read can see is from before the bump, which ended
// it. Either way the answer must not be HELD: a HELD statement about an
// old range signed after a newer range was in use is a gate's proof of a
// regression, and pauses the resource. Refusing instead keeps the
// resource running once an operator bumps the range again.
func (r *Registry) checkGeneration(set lockstate.Settings) error {
	if seen := r.generationSeen(); set.FenceGeneration < seen {
		return fmt.Errorf("%w: the store's fence generation is %d, below %d, which this registry has read before: the store went back (a restore?); bump the range (fencegate fence-range bump)",
			wire.ErrFenceRange, set.FenceGeneration, seen)
	}
	return nil
}
