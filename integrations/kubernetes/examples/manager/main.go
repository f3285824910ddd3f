// Command manager is a controller-runtime Manager whose leader election
// is a fencegate election (fencedlock.Lock as
// manager.Options.LeaderElectionResourceLockInterface), and whose leader
// writes to PostgreSQL through the gate under the term's fence.
//
// Run it against `fencegate serve --dev`, twice, and watch one lead:
//
//	fencegate serve --dev &
//	go run ./examples/manager -database 'postgres://…' -id a &
//	go run ./examples/manager -database 'postgres://…' -id b
//
// The leader prints "leading term=N" and then "wrote n=K term=N outcome=ACCEPTED"
// every -every. Stop it (SIGSTOP) past its lease and the other leads at a
// higher term; when the stopped one thaws its lock answers client-go that
// the term is over, the manager stops with "leader election lost", and a
// write it had in flight is refused by the gate (STALE_OWNER).
//
// What it needs from Kubernetes: controller-runtime's manager.New takes a
// *rest.Config and will not start without one, but a manager whose
// leader election is this lock and whose only work is Runnables that do
// not use the manager's client or cache never dials it. The example uses
// the kubeconfig controller-runtime finds (KUBECONFIG, in-cluster,
// ~/.kube/config) and, when there is none, a placeholder host under
// .invalid, which no resolver answers. Controllers that watch Kubernetes
// objects need a real API server, as always; the election does not.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/integrations/kubernetes/fencedlock"
)

// placeholderHost is the API server the manager is given when no
// kubeconfig is found: it is never dialled (see the package comment).
const placeholderHost = "https://no-kube-apiserver.invalid"

func main() {
	registry := flag.String("registry", "http://127.0.0.1:7420", "the registry's URL (fencegate serve)")
	token := flag.String("token", "fencegate-dev-token", "the registry's bearer token (serve --dev's by default)")
	database := flag.String("database", "", "PostgreSQL URL the leader writes to through the gate (required)")
	resource := flag.String("resource", "election/example-manager", "the election's registry resource")
	host, _ := os.Hostname()
	id := flag.String("id", host+"_"+strconv.Itoa(os.Getpid()), "this replica's identity")
	leaseDuration := flag.Duration("lease-duration", 15*time.Second, "LeaseDuration, whole seconds")
	renewDeadline := flag.Duration("renew-deadline", 4*time.Second, "RenewDeadline")
	retryPeriod := flag.Duration("retry-period", time.Second, "RetryPeriod")
	every := flag.Duration("every", time.Second, "how often the leader writes")
	flag.Parse()
	if err := run(*registry, *token, *database, *every, fencedlock.Config{Resource: *resource, Identity: *id,
		LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod}); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run(registry, token, database string, every time.Duration, cfg fencedlock.Config) error {
	if database == "" {
		return errors.New("-database is required")
	}
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	ctx := ctrl.SetupSignalHandler()
	w, err := httpclient.Connect(ctx, registry, httpclient.WithBearerToken(token))
	if err != nil {
		return err
	}
	lock, err := fencedlock.New(w.Session, cfg)
	if err != nil {
		return err
	}
	db, err := sqlgate.OpenLocal(ctx, database, w.Verifier)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.DB.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS example_manager (id int PRIMARY KEY, n bigint, term bigint, writer text)`); err != nil {
		return err
	}

	kube, err := config.GetConfig()
	if err != nil {
		kube = &rest.Config{Host: placeholderHost}
	}
	fmt.Printf("kube-apiserver %s (never dialled: no controllers, no client calls)\n", kube.Host)
	// The manager's elector runs on the lock with the lock's own timings,
	// which Config.Check accepted.
	c := lock.Config()
	mgr, err := ctrl.NewManager(kube, manager.Options{
		LeaderElection:                      true,
		LeaderElectionID:                    c.Resource,
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &c.LeaseDuration,
		RenewDeadline:                       &c.RenewDeadline,
		RetryPeriod:                         &c.RetryPeriod,
		Metrics:                             metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	// A Runnable that needs leader election (the default) starts once this
	// replica leads. Its ctx is the manager's, not the term's: WithTerm
	// gives the term's, which ends the moment leading is no longer certain.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return lead(ctx, lock, db, every, c.Identity)
	}))
	if err != nil {
		return err
	}
	fmt.Printf("started id=%s\n", c.Identity)
	return mgr.Start(ctx)
}

// lead is the leader's work: it writes the row every period, through the
// gate under the term's lease, until the term or the manager ends.
func lead(ctx context.Context, lock *fencedlock.Lock, db *sqlgate.Local, every time.Duration, id string) error {
	term, cancel, err := lock.WithTerm(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	lease, _ := fencedlock.LeaseFrom(term)
	fmt.Printf("leading term=%d\n", lease.Fence())
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := int64(1); ; n++ {
		_, err := client.Apply(term, lease, db, []byte(strconv.FormatInt(n, 10)), func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO example_manager (id, n, term, writer) VALUES (1, $1, $2, $3)
				ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n, term = EXCLUDED.term, writer = EXCLUDED.writer`,
				n, int64(lease.Fence()), id)
			return err
		})
		fmt.Printf("wrote n=%d term=%d outcome=%s\n", n, lease.Fence(), outcome(err))
		select {
		case <-term.Done():
			if ctx.Err() != nil {
				return nil // the manager is stopping
			}
			return fmt.Errorf("term %d over: %w", lease.Fence(), context.Cause(term))
		case <-tick.C:
		}
	}
}

func outcome(err error) string {
	if err == nil {
		return "ACCEPTED"
	}
	if o := gate.OutcomeOf(err); o != "" {
		return string(o)
	}
	return "ERROR(" + err.Error() + ")"
}
