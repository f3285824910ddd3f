package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/gate/redisgate"
)

const probeRedisLong = `Check that a Redis server keeps every write it acknowledged across a
restart and a crash, which gate/redisgate's fences rest on: it reads
appendonly, appendfsync, save, maxmemory and maxmemory-policy (CONFIG GET)
and the server's version and run_id (INFO), and writes nothing.

Only appendonly yes with appendfsync always keeps every fence: without the
append-only file a restart loses every write since the last snapshot;
with appendfsync everysec or no a crash of the machine loses the last
second or seconds; allkeys-* eviction with a maxmemory can drop the gate's
keys. redisgate runs the same check at start (and after every reconnect)
and refuses enforce mode on a server that fails it, naming the setting.
--accept-fence-loss makes this command exit 0 on such a server, as
Config.AcceptFenceLoss makes the gate run enforce mode on it: the operator
accepts that after Redis loses acknowledged writes a stale write can be
ACCEPTED. A server that refuses CONFIG GET fails the check.

The password, if the URL has none, comes from REDISCLI_AUTH, as for
redis-cli. Exit status 0 if the server keeps fences (or the risk was
accepted), 1 if it does not.`

func newProbeRedisCmd() *cobra.Command {
	var url string
	var cluster, accept bool
	c := &cobra.Command{
		Use:     "redis --url redis://HOST:PORT",
		Short:   "check that a Redis server's persistence keeps fences across a restart",
		Long:    probeRedisLong,
		Example: "  fencegate probe redis --url redis://10.0.0.5:6379\n  REDISCLI_AUTH=secret fencegate probe redis --url rediss://cache.internal:6380 --cluster",
		RunE: func(c *cobra.Command, _ []string) error {
			return runProbeRedis(c.Context(), c.OutOrStdout(), c.ErrOrStderr(), url, cluster, accept)
		},
	}
	fs := c.Flags()
	fs.StringVar(&url, "url", "redis://127.0.0.1:6379", "the server: redis://[user[:password]@]host:port (rediss:// for TLS)")
	fs.BoolVar(&cluster, "cluster", false, "a Redis Cluster: check every primary it reports")
	fs.BoolVar(&accept, "accept-fence-loss", false, "exit 0 on a server that can lose acknowledged writes, with a warning: the operator accepts that a stale write can then be accepted")
	return c
}

func runProbeRedis(ctx context.Context, stdout, stderr io.Writer, url string, cluster, accept bool) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return usagef("--url: %v", err)
	}
	if opt.Password == "" {
		opt.Password = os.Getenv("REDISCLI_AUTH")
	}
	var c redis.UniversalClient = redis.NewClient(opt)
	if cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig})
	}
	defer c.Close()
	reps, err := redisgate.CheckPersistence(ctx, c)
	printPersistence(stdout, reps)
	switch {
	case err == nil:
		fmt.Fprintln(stdout, "RESULT: the server keeps every acknowledged write across a restart and a crash; redisgate can enforce on it")
		return nil
	case !errors.Is(err, redisgate.ErrVolatilePersistence):
		return err
	case accept:
		fmt.Fprintln(stdout, "RESULT: this server can lose acknowledged writes, and with them fences; ACCEPTED by --accept-fence-loss")
		fmt.Fprintf(stderr, "WARNING: --accept-fence-loss: this Redis can lose acknowledged writes (%s); after it does, a stale write can be ACCEPTED\n", failedSettings(reps, err))
		return nil
	}
	fmt.Fprintln(stdout, "RESULT: this server can lose acknowledged writes, and with them fences; redisgate refuses enforce mode on it")
	return err
}

func printPersistence(w io.Writer, reps []redisgate.PersistenceReport) {
	for _, r := range reps {
		fmt.Fprintf(w, "probe redis %s (redis %s, run_id %s)\n", r.Addr, r.Version, r.RunID)
		for _, s := range r.Settings {
			verdict, want := "ok", s.Want
			if s.Why != "" {
				verdict = "FAIL: " + s.Why
			}
			if want == "" {
				want = "any"
			}
			value := s.Value
			if value == "" {
				value = `""`
			}
			fmt.Fprintf(w, "  %-17s %-12s want %-26s %s\n", s.Name, value, want, verdict)
		}
		if r.Err != nil && len(r.Settings) == 0 {
			fmt.Fprintf(w, "  %v\n", r.Err)
		}
	}
}

// failedSettings names the settings that failed ("appendfsync everysec"),
// or err when none was read.
func failedSettings(reps []redisgate.PersistenceReport, err error) string {
	var out []string
	for _, r := range reps {
		for _, s := range r.Settings {
			if s.Why != "" {
				out = append(out, s.Name+" "+s.Value)
			}
		}
	}
	if len(out) == 0 {
		return err.Error()
	}
	return strings.Join(out, ", ")
}
