package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

func init() { register(newFenceRangeCmd) }

// fenceRangeTarget is where a fence-range command acts: the registry's
// admin API, or, when store flags are given, the store itself.
type fenceRangeTarget struct {
	reg   *endpointFlags
	store storeOptions
}

func newFenceRangeCmd() *cobra.Command {
	c := parentCommand("fence-range", "bump or show the registry's fence range (admin)",
		`Every fence the registry issues is generation<<32 | counter. A bump moves
the generation above every generation any earlier store or range issued
in, so every resource's next fence is above every fence issued before, with
nothing to do per resource or at the gates; every lease granted before it
ends. Bump after every switch of the coordination backend (copied or not)
and after every restore of its store, before writers continue.

Through the registry (--registry, an admin identity; audited in serve's
log), or directly on the store with serve's store flags (--data-dir with
serve stopped, --etcd-endpoints, --zookeeper): for a restored or new store,
before serve starts on it, as etcdutl's --bump-revision is done before etcd
starts.`)
	t := &fenceRangeTarget{reg: &endpointFlags{name: "registry"}}
	fs := c.PersistentFlags()
	fs.SortFlags = false
	t.reg.add(fs, registryDefault, "the registry's URL (unless the store's flags are given)")
	tokenFlag(fs, t.reg)
	t.store.flags(fs, "reach the embedded etcd of serve's --data-dir DIR directly (serve stopped)")
	// Only the passwords come from the environment: a FENCEGATE_ZOOKEEPER
	// left in an operator's shell must not turn a command meant for the
	// registry into one on a store.
	bindEnv(fs, "etcd-password", "zookeeper-password")
	c.AddCommand(newFenceRangeBumpCmd(t), newFenceRangeShowCmd(t))
	return c
}

// storeTimeout bounds an operator command on a store directly, 60 s: an
// embedded etcd takes a few seconds to start, a remote store to dial.
const storeTimeout = 60 * time.Second

// storeContext is callContext, or for a command on the store itself
// storeTimeout.
func storeContext(ctx context.Context, direct bool) (context.Context, context.CancelFunc) {
	if direct {
		return context.WithTimeout(ctx, storeTimeout)
	}
	return callContext(ctx)
}

// direct reports whether the command acts on the store, after checking
// that it was told one place to act.
func (t *fenceRangeTarget) direct(c *cobra.Command) (bool, error) {
	if t.store.dataDir == "" && !t.store.external() {
		return false, t.store.check() // stray --etcd-*/--zookeeper-* flags are still refused
	}
	if c.Flags().Changed("registry") {
		return false, usagef("give --registry or the store's flags (--data-dir, --etcd-endpoints, --zookeeper), not both")
	}
	if err := t.store.checkDirect(); err != nil {
		return false, err
	}
	return true, t.store.load()
}

// withStore opens the named store for fn; mustExist refuses an embedded
// etcd directory that is not there (a typo would otherwise start an empty
// one).
func (t *fenceRangeTarget) withStore(ctx context.Context, who string, stderr io.Writer, mustExist bool, fn func(registry.Store) error) error {
	return withStore(ctx, &t.store, who, stderr, mustExist, fn)
}

func withStore(ctx context.Context, s *storeOptions, who string, stderr io.Writer, mustExist bool, fn func(registry.Store) error) error {
	if !s.external() {
		if _, err := os.Stat(filepath.Join(s.dataDir, "etcd", "member")); mustExist && err != nil {
			return fmt.Errorf("no embedded etcd in %s: is this serve's --data-dir? (%v)", filepath.Join(s.dataDir, "etcd"), err)
		}
	}
	store, _, closeStore, err := s.open(ctx, who, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(store)
}

// checkDataDir refuses a --data-dir that does not exist: a bump there
// would start and bump an empty store while serve's own stays unbumped.
// One whose etcd is not there yet (a new embedded store) is bumped.
func checkDataDir(s *storeOptions) error {
	if s.external() {
		return nil
	}
	if fi, err := os.Stat(s.dataDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--data-dir %s: not a directory (is this serve's --data-dir?): %v", s.dataDir, err)
	}
	return nil
}

func newFenceRangeBumpCmd(t *fenceRangeTarget) *cobra.Command {
	var above, skewMs uint64
	var note string
	bump := &cobra.Command{
		Use:   "bump --note TEXT [--above FENCE]",
		Short: "move every resource's next fence above every fence issued before, and end every earlier lease",
		Example: `  fencegate fence-range bump --note "switched to ZooKeeper, CHG-12"                       # through the registry
  fencegate fence-range bump --note "restored from the 02:00 copy, INC-7" --data-dir /var/lib/fencegate   # serve stopped
  fencegate fence-range bump --note "rollback to etcd" --above 7664240349212409856 --etcd-endpoints https://etcd-1:2379`,
		RunE: func(c *cobra.Command, _ []string) error {
			if note == "" {
				return usagef("--note TEXT is required: why the range moves (a change, an incident); it is recorded with your identity")
			}
			direct, err := t.direct(c)
			if err != nil {
				return err
			}
			if !direct && skewMs != 0 {
				return usagef("--clock-skew-max-ms is for a bump on the store itself: through the registry, serve's own bound applies")
			}
			ctx, cancel := storeContext(c.Context(), direct)
			defer cancel()
			var before, after wire.FenceRange
			if direct {
				if err := checkDataDir(&t.store); err != nil {
					return err
				}
				err = t.withStore(ctx, "fencegate fence-range bump", c.ErrOrStderr(), false, func(s registry.Store) error {
					before, after, err = bumpStore(ctx, s, above, skewMs, note, c.ErrOrStderr())
					return err
				})
			} else {
				before, after, err = bumpRegistry(ctx, t.reg, above, note)
			}
			if err != nil {
				return adminErr(err)
			}
			printBump(c.OutOrStdout(), before, after)
			return nil
		},
	}
	bump.Flags().Uint64Var(&above, "above", 0, "a fence the new range must be above: the highest any gate reports, or the last fence of the range of the store you switch from (default: the clock orders bumps)")
	bump.Flags().StringVar(&note, "note", "", "why (a change, an incident); recorded with your identity")
	bump.Flags().Uint64Var(&skewMs, "clock-skew-max-ms", 0, "with the store's flags only: serve's --clock-skew-max-ms, how far past its second the bump waits for the clock (0: 500)")
	return bump
}

func bumpRegistry(ctx context.Context, reg *endpointFlags, above uint64, note string) (wire.FenceRange, wire.FenceRange, error) {
	rc, err := reg.registryClient()
	if err != nil {
		return wire.FenceRange{}, wire.FenceRange{}, err
	}
	before, err := rc.FenceRange(ctx)
	if err != nil {
		return before, wire.FenceRange{}, err
	}
	after, err := rc.BumpFenceRange(ctx, wire.FenceRangeBumpRequest{Above: above, Note: note})
	return before, after, err
}

// bumpStore bumps the store directly and records the bump as serve's
// audit line would, on stderr (there is no serve to log it).
func bumpStore(ctx context.Context, s registry.Store, above, skewMs uint64, note string, stderr io.Writer) (wire.FenceRange, wire.FenceRange, error) {
	skew := registry.DefaultConfig(1).ClockSkewMaxMs // serve's default bound
	if skewMs != 0 {
		skew = skewMs
	}
	before, err := registry.ReadFenceRange(ctx, s)
	if err != nil {
		return before, wire.FenceRange{}, err
	}
	after, err := registry.BumpFenceRange(ctx, s, clock.System{}, above, skew)
	outcome, value := "ok", after.Generation
	if err != nil {
		outcome, value = wire.CodeOf(err), above
		if outcome == "" {
			outcome = wire.CodeInternal
		}
	}
	slog.New(slog.NewTextHandler(stderr, nil)).Info("admin action", "audit", true, "operator", localOperator(),
		"action", "bump-fence-range", "value", value, "note", note, "outcome", outcome, "via", "store")
	return before, after, err
}

// localOperator names whoever runs a command on the store directly:
// user@host, as the machine knows them.
func localOperator() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func printBump(w io.Writer, before, after wire.FenceRange) {
	fmt.Fprintf(w, "fence range bumped: generation %d → %d\n", before.Generation, after.Generation)
	fmt.Fprintf(w, "next fences:        %d … %d (every resource's next fence is above every fence issued before)\n", after.First, after.Last)
	fmt.Fprintf(w, "leases granted before the bump have ended: their holders acquire again\n")
	if after.AheadOfClockMs > 0 {
		fmt.Fprintf(w, "note: generation %d is %s ahead of the clock: a bump of a store that knows nothing of this one must be given --above %d\n",
			after.Generation, (time.Duration(after.AheadOfClockMs) * time.Millisecond).Round(time.Second), after.Last)
	}
}

func newFenceRangeShowCmd(t *fenceRangeTarget) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "the fence range the registry issues from now",
		RunE: func(c *cobra.Command, _ []string) error {
			direct, err := t.direct(c)
			if err != nil {
				return err
			}
			ctx, cancel := storeContext(c.Context(), direct)
			defer cancel()
			var fr wire.FenceRange
			if direct {
				err = t.withStore(ctx, "fencegate fence-range show", c.ErrOrStderr(), true, func(s registry.Store) error {
					fr, err = registry.ReadFenceRange(ctx, s)
					return err
				})
			} else if rc, cerr := t.reg.registryClient(); cerr != nil {
				err = cerr
			} else {
				fr, err = rc.FenceRange(ctx)
			}
			if err != nil {
				return adminErr(err)
			}
			printFenceRange(c.OutOrStdout(), fr)
			return nil
		},
	}
}

func printFenceRange(w io.Writer, fr wire.FenceRange) {
	bumped := "never bumped: fences count from 1, as before ranges"
	if fr.BumpedAt != nil {
		bumped = "bumped " + fr.BumpedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "generation: %d (%s)\n", fr.Generation, bumped)
	fmt.Fprintf(w, "range:      %d … %d\n", fr.First, fr.Last)
	fmt.Fprintf(w, "revision:   %d\n", fr.Revision)
	fmt.Fprintf(w, "switching from this store to one that knows nothing of it: bump there with --above %d\n", fr.Last)
	if fr.Generation > 0 {
		fmt.Fprintf(w, "a gate that paused before this range: fencegate gate resume RESOURCE --floor %d --note …\n", fr.First-1)
	}
}
