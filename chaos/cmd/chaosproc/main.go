// Command chaosproc is the chaos suite's process binary: `chaosproc
// worker` writes through the gate under leases, `chaosproc service` is the
// resource service running the gate on PostgreSQL. The suite builds and
// starts it; it is not a user tool.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/fencegate/fencegate/chaos/chaosproc"
	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/httpapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chaosproc worker|service [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "worker":
		err = worker(ctx, os.Args[2:])
	case "service":
		err = service(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "chaosproc:", err)
		os.Exit(1)
	}
}

func worker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	name := fs.String("name", "", "process and owner name")
	token := fs.String("token", "", "bearer token of the worker's identity")
	registries := fs.String("registries", "", "comma-separated registry URLs (one per replica)")
	services := fs.String("services", "", "comma-separated resource service URLs")
	resources := fs.String("resources", "", "comma-separated resources")
	semaphores := fs.String("semaphores", "", "comma-separated counting semaphores (optional)")
	permits := fs.Uint64("permits", 2, "each semaphore's permits")
	rwlocks := fs.String("rwlocks", "", "comma-separated read/write locks (optional)")
	ttlMs := fs.Int("ttl-ms", 3000, "lease TTL")
	waitMs := fs.Int("wait-ms", 1500, "how long an acquire queues")
	segs := fs.Int("segments-max", 3, "segments per operation, at most")
	thinkMs := fs.Int("think-ms", 500, "longest computation of one segment")
	seed := fs.Uint64("seed", 1, "seed of the worker's choices")
	events := fs.String("events", "", "history file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rec, err := record.Create(*events)
	if err != nil {
		return err
	}
	defer rec.Close()
	t := &chaosproc.Transport{Rec: rec, Proc: *name, Owner: *name}
	for _, u := range strings.Split(*registries, ",") {
		c, err := httpclient.NewClient(u, httpclient.WithBearerToken(*token))
		if err != nil {
			return err
		}
		t.Replicas = append(t.Replicas, c)
	}
	var svcs []*chaosproc.ServiceClient
	for _, u := range strings.Split(*services, ",") {
		svcs = append(svcs, &chaosproc.ServiceClient{Base: u, Token: *token, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}})
	}
	clock := &chaosproc.OffsetClock{}
	go control(clock, func(off time.Duration) {
		rec.Emit(record.Event{Kind: record.KindClock, Proc: *name, CallNs: record.Now(), RetNs: record.Now(), Result: record.ResultOK, Detail: off.String()})
	})
	var reg client.Transport = t
	return chaosproc.RunWorker(ctx, chaosproc.WorkerConfig{
		Name: *name, Registry: reg, Services: svcs, Resources: strings.Split(*resources, ","),
		Semaphores: splitList(*semaphores), Permits: *permits, RWLocks: splitList(*rwlocks),
		TTL: time.Duration(*ttlMs) * time.Millisecond, Wait: time.Duration(*waitMs) * time.Millisecond,
		SegmentsMax: *segs, ThinkMax: time.Duration(*thinkMs) * time.Millisecond,
		Seed: *seed, Clock: clock, Rec: rec,
	})
}

// splitList splits a comma-separated list; "" is none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// control reads the orchestrator's commands on stdin: "clock <offset ms>".
func control(clock *chaosproc.OffsetClock, stepped func(time.Duration)) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "clock" {
			if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				clock.Set(time.Duration(ms) * time.Millisecond)
				stepped(clock.Offset())
			}
		}
	}
}

func service(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	name := fs.String("name", "", "process name")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	dsn := fs.String("dsn", "", "PostgreSQL DSN")
	bundle := fs.String("bundle", "", "the registry's trust bundle")
	tokens := fs.String("token-file", "", "bearer tokens of the workers")
	events := fs.String("events", "", "history file")
	mutant := fs.Bool("mutant-no-fence", false, "NEGATIVE CONTROL: apply lease-only, without the fence check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rec, err := record.Create(*events)
	if err != nil {
		return err
	}
	defer rec.Close()
	b, err := grant.LoadBundle(*bundle)
	if err != nil {
		return err
	}
	auth, err := httpapi.NewAuthenticator(*tokens, false)
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(8)
	svc, err := chaosproc.NewService(ctx, chaosproc.ServiceConfig{Name: *name, DB: db, Verifier: grant.NewVerifier(b, 0), Auth: auth, Rec: rec, MutantNoFence: *mutant})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("chaosproc service: listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
