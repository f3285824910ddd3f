package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcdstore"
)

// storeOptions name the registry's store: the embedded etcd in
// --data-dir/etcd (the default), an etcd cluster (--etcd-endpoints) or a
// ZooKeeper ensemble (--zookeeper). serve runs on it; fence-range bump
// and show and registry export and import reach it directly, with the
// same flags, so an operator names a store the same way everywhere.
type storeOptions struct {
	dataDir, etcdPrefix string
	etcdEndpoints       []string
	etcd                etcdstore.ClientConfig // endpoints filled from etcdEndpoints
	etcdPasswordFile    string
	zk                  zkOptions
	// formName is --stored-form; form its parsed value (check).
	formName string
	form     registry.StoredForm
	// unsafeNoFsync turns off the embedded etcd's fsync: tests only.
	unsafeNoFsync bool
	// etcdQuotaBytes is --etcd-quota-bytes: the embedded member's quota,
	// or an external cluster's when its members do not report it.
	etcdQuotaBytes int64
}

// Bounds of --etcd-quota-bytes: below 16 MiB a registry has no room to
// work; above 8 GiB etcd warns (its documented largest quota).
const (
	etcdQuotaBytesMin = 16 << 20
	etcdQuotaBytesMax = 8 << 30
)

// flags registers the store's flags; dataDirUsage is --data-dir's help.
func (s *storeOptions) flags(fs *pflag.FlagSet, dataDirUsage string) {
	fs.StringVar(&s.dataDir, "data-dir", "", dataDirUsage)
	fs.StringSliceVar(&s.etcdEndpoints, "etcd-endpoints", nil, "external etcd client URLs, comma-separated; default: an embedded single-member etcd in --data-dir")
	fs.StringVar(&s.etcdPrefix, "etcd-prefix", etcdstore.DefaultPrefix, "etcd key prefix; every replica of one registry uses the same")
	fs.StringVar(&s.etcd.CACertFile, "etcd-cacert", "", "CA bundle (PEM) verifying the etcd cluster's server certificates")
	fs.StringVar(&s.etcd.CertFile, "etcd-cert", "", "client certificate (PEM) for etcd, with --etcd-key")
	fs.StringVar(&s.etcd.KeyFile, "etcd-key", "", "client private key (PEM) for etcd")
	fs.StringVar(&s.etcd.Username, "etcd-user", "", "etcd auth user name (etcd auth enable); the password comes from --etcd-password-file or FENCEGATE_ETCD_PASSWORD")
	fs.StringVar(&s.etcdPasswordFile, "etcd-password-file", "", "file holding the etcd user's password (one line)")
	fs.StringVar(&s.etcd.Password, "etcd-password", "", "etcd user's password; prefer FENCEGATE_ETCD_PASSWORD or --etcd-password-file (a flag shows in ps)")
	_ = fs.MarkHidden("etcd-password") // settable, but through the environment
	fs.StringVar(&s.formName, "stored-form", registry.FormCompact.String(),
		"how records and request entries are written: compact, or json while replicas of a version before the compact form share the store (docs/operations.md)")
	fs.Int64Var(&s.etcdQuotaBytes, "etcd-quota-bytes", 0, "the etcd space quota, 16 MiB to 8 GiB: the embedded member's (0: 8 GiB), or, with --etcd-endpoints, the cluster's --quota-backend-bytes when its members are older than 3.6 and do not report it (0: not known); new grants stop at 90% of it")
	s.zk.flags(fs)
}

// external reports whether the flags name a store outside --data-dir.
func (s *storeOptions) external() bool { return len(s.etcdEndpoints) > 0 || s.zk.on() }

// check validates the store's flags without touching files or the
// network. Its errors are usage errors that say what to change.
func (s *storeOptions) check() error {
	switch {
	case len(s.etcdEndpoints) == 0 && (s.etcd.CACertFile != "" || s.etcd.CertFile != "" || s.etcd.Username != ""):
		return usagef("--etcd-cacert, --etcd-cert, --etcd-key and --etcd-user are for an external cluster: give --etcd-endpoints too")
	case s.etcdPasswordFile != "" && s.etcd.Password != "":
		return usagef("give the etcd password once: --etcd-password-file or FENCEGATE_ETCD_PASSWORD, not both")
	}
	switch q := s.etcdQuotaBytes; {
	case q != 0 && s.zk.on():
		return usagef("--etcd-quota-bytes is etcd's: ZooKeeper's limits are its own (docs/operations.md)")
	case q != 0 && (q < etcdQuotaBytesMin || q > etcdQuotaBytesMax):
		return usagef("--etcd-quota-bytes %d: want %d (16 MiB) to %d (8 GiB), or 0 for the default", q, etcdQuotaBytesMin, etcdQuotaBytesMax)
	}
	form, err := registry.ParseStoredForm(s.formName)
	if err != nil {
		return usagef("--stored-form %q: want compact or json", s.formName)
	}
	s.form = form
	if err := s.zk.check(len(s.etcdEndpoints) > 0); err != nil {
		return err
	}
	if len(s.etcdEndpoints) > 0 {
		s.etcd.Endpoints = s.etcdEndpoints
		if s.etcdPasswordFile != "" && s.etcd.Username == "" {
			return usagef("--etcd-password-file needs --etcd-user")
		}
		if err := s.etcd.Check(); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

// checkDirect is check for a command that reaches the store itself: it
// needs exactly one store named.
func (s *storeOptions) checkDirect() error {
	switch {
	case s.dataDir == "" && !s.external():
		return usagef("name the store: --data-dir DIR (serve's, with serve stopped), --etcd-endpoints URLS or --zookeeper ADDRS, with the flags serve runs with")
	case s.dataDir != "" && s.external():
		return usagef("--data-dir names the embedded etcd; with --etcd-endpoints or --zookeeper it is not used: give one store")
	}
	return s.check()
}

// load reads the password files.
func (s *storeOptions) load() error {
	if s.etcdPasswordFile != "" {
		pw, err := os.ReadFile(s.etcdPasswordFile)
		if err != nil {
			return fmt.Errorf("--etcd-password-file: %w", err)
		}
		s.etcd.Password = string(trimNewline(pw))
	}
	return s.zk.load()
}

// open opens the ZooKeeper ensemble named by --zookeeper, the external
// etcd cluster named by --etcd-endpoints, or starts the embedded member
// in --data-dir/etcd; who starts the lines it writes to stderr.
func (s *storeOptions) open(ctx context.Context, who string, stderr io.Writer) (registry.Store, storeEngine, func(), error) {
	if s.zk.on() {
		st, closeStore, err := s.zk.open(ctx, who, stderr, s.form)
		return st, engineZooKeeper, closeStore, err
	}
	if len(s.etcd.Endpoints) > 0 {
		// Not tied to ctx: calls in flight at shutdown get their grace;
		// closeStore closes the client after Serve returns.
		c, err := etcdstore.Dial(ctx, s.etcd, s.etcdPrefix)
		if err != nil {
			return nil, storeEngine{}, nil, fmt.Errorf("%w (check --etcd-endpoints, --etcd-cacert/--etcd-cert/--etcd-key and --etcd-user)", err)
		}
		fmt.Fprintf(stderr, "%s: using etcd cluster %v\n", who, s.etcd.Endpoints)
		// Its operators compact, defragment and disarm it
		// (docs/operations.md); serve watches its space and stops new
		// grants near the quota.
		engine := engineEtcd
		if engine.space, err = etcdstore.NewSpace(c, etcdstore.SpaceOptions{QuotaBytes: s.etcdQuotaBytes}); err != nil {
			c.Close()
			return nil, storeEngine{}, nil, err
		}
		return etcdstore.New(c, s.etcdPrefix, etcdstore.WithStoredForm(s.form)).GuardSpace(engine.space), engine, func() { c.Close() }, nil
	}
	dir := filepath.Join(s.dataDir, "etcd")
	em, err := etcdstore.StartEmbedded(ctx, dir, etcdstore.EmbeddedOptions{UnsafeNoFsync: s.unsafeNoFsync, QuotaBytes: s.etcdQuotaBytes})
	if err != nil {
		return nil, storeEngine{}, nil, err
	}
	// The space watch speaks to the member over its endpoint (an
	// in-process client has none); serve is its operator, so it also
	// compacts, defragments and disarms.
	mc, err := em.Client()
	if err != nil {
		em.Close()
		return nil, storeEngine{}, nil, err
	}
	engine := engineEmbeddedEtcd
	if engine.space, err = etcdstore.NewSpace(mc, etcdstore.SpaceOptions{Recover: true}); err != nil {
		mc.Close()
		em.Close()
		return nil, storeEngine{}, nil, err
	}
	// The registry calls the member in process: a commit takes no
	// loopback gRPC exchange. etcdctl still reaches it on its endpoint.
	c, inProcess := em.InProcess()
	fmt.Fprintf(stderr, "%s: embedded etcd in %s (etcd clients: %s)\n", who, dir, strings.Join(em.Endpoints(), ","))
	store := etcdstore.New(c, s.etcdPrefix, inProcess, etcdstore.WithStoredForm(s.form)).GuardSpace(engine.space)
	return store, engine, func() { mc.Close(); c.Close(); em.Close() }, nil
}
