package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/zkstore"
)

// zkOptions are serve's flags for running on ZooKeeper instead of etcd.
type zkOptions struct {
	servers      []string
	root         string
	cfg          zkstore.ClientConfig // servers filled from servers
	passwordFile string
	juteMax      int // the ensemble's jute.maxbuffer, bytes
}

func (z *zkOptions) flags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&z.servers, "zookeeper", nil, "run on a ZooKeeper ensemble instead of etcd: host:port list, comma-separated")
	fs.StringVar(&z.root, "zookeeper-root", zkstore.DefaultRoot, "ZooKeeper node the registry keeps its state under; every replica of one registry uses the same")
	fs.StringVar(&z.cfg.CACertFile, "zookeeper-cacert", "", "CA bundle (PEM) verifying the ensemble's certificates; turns TLS on (the servers' secureClientPort)")
	fs.StringVar(&z.cfg.CertFile, "zookeeper-cert", "", "client certificate (PEM) for ZooKeeper, with --zookeeper-key (ssl.clientAuth=need)")
	fs.StringVar(&z.cfg.KeyFile, "zookeeper-key", "", "client private key (PEM) for ZooKeeper")
	fs.StringVar(&z.cfg.Username, "zookeeper-user", "", "ZooKeeper digest auth user; the registry's nodes are then this user's alone; the password comes from --zookeeper-password-file or FENCEGATE_ZOOKEEPER_PASSWORD")
	fs.StringVar(&z.passwordFile, "zookeeper-password-file", "", "file holding the ZooKeeper digest user's password (one line)")
	fs.StringVar(&z.cfg.Password, "zookeeper-password", "", "ZooKeeper digest user's password; prefer FENCEGATE_ZOOKEEPER_PASSWORD or --zookeeper-password-file (a flag shows in ps)")
	_ = fs.MarkHidden("zookeeper-password") // settable, but through the environment
	fs.IntVar(&z.juteMax, "zookeeper-jute-maxbuffer", zkstore.JuteMaxBufferDefault,
		"the ensemble's jute.maxbuffer (bytes; the servers' -Djute.maxbuffer): a commit that may exceed it is refused STORE_FULL unsent, where ZooKeeper would drop the connection over it")
	durationVar(fs, &z.cfg.DialTimeout, "zookeeper-dial-timeout", zkstore.DialTimeoutMsDefault*time.Millisecond,
		"how long to wait at start for a ZooKeeper session, its authentication and a read of --zookeeper-root", durationRange{})
}

func (z *zkOptions) on() bool { return len(z.servers) > 0 }

// check validates the flags without touching files or the network.
func (z *zkOptions) check(etcdToo bool) error {
	switch {
	case z.on() && etcdToo:
		return usagef("--zookeeper and --etcd-endpoints name two stores: give one")
	case !z.on() && (z.cfg.CACertFile != "" || z.cfg.CertFile != "" || z.cfg.KeyFile != "" || z.cfg.Username != "" || z.passwordFile != ""):
		return usagef("--zookeeper-cacert, --zookeeper-cert, --zookeeper-key, --zookeeper-user and --zookeeper-password-file need --zookeeper")
	case !z.on():
		return nil
	case z.juteMax < zkstore.JuteMaxBufferMin || z.juteMax > zkstore.JuteMaxBufferMax:
		return usagef("--zookeeper-jute-maxbuffer %d: want %d to %d bytes", z.juteMax, zkstore.JuteMaxBufferMin, zkstore.JuteMaxBufferMax)
	case z.cfg.DialTimeout <= 0:
		return usagef("--zookeeper-dial-timeout must be positive, got %s", z.cfg.DialTimeout)
	case z.passwordFile != "" && z.cfg.Password != "":
		return usagef("give the ZooKeeper password once: --zookeeper-password-file or FENCEGATE_ZOOKEEPER_PASSWORD, not both")
	case (z.passwordFile != "" || z.cfg.Password != "") && z.cfg.Username == "":
		return usagef("a ZooKeeper password needs --zookeeper-user")
	case z.cfg.Username != "" && z.passwordFile == "" && z.cfg.Password == "":
		return usagef("--zookeeper-user needs a password: --zookeeper-password-file or FENCEGATE_ZOOKEEPER_PASSWORD")
	}
	z.cfg.Servers = z.servers
	c := z.cfg
	if z.passwordFile != "" {
		c.Password = "(from the file)" // load reads it
	}
	if err := c.Check(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// load reads the password file.
func (z *zkOptions) load() error {
	if z.passwordFile == "" {
		return nil
	}
	pw, err := os.ReadFile(z.passwordFile)
	if err != nil {
		return fmt.Errorf("--zookeeper-password-file: %w", err)
	}
	if z.cfg.Password = string(trimNewline(pw)); z.cfg.Password == "" {
		return fmt.Errorf("--zookeeper-password-file %s is empty", z.passwordFile)
	}
	return nil
}

// open connects to the ensemble and opens the store under
// --zookeeper-root; who starts the line it writes to stderr.
func (z *zkOptions) open(ctx context.Context, who string, stderr io.Writer, form registry.StoredForm) (registry.Store, func(), error) {
	conn, err := zkstore.Dial(ctx, z.cfg, z.root)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (check --zookeeper, --zookeeper-cacert/--zookeeper-cert/--zookeeper-key and --zookeeper-user)", err)
	}
	s, err := zkstore.New(ctx, conn, z.root, z.cfg.ACL(), zkstore.WithStoredForm(form), zkstore.WithJuteMaxBuffer(z.juteMax),
		zkstore.WithWentBack(func(err error) { fmt.Fprintf(stderr, "%s: %v\n", who, err) }))
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("%w (check --zookeeper-root and the user's permissions)", err)
	}
	fmt.Fprintf(stderr, "%s: using ZooKeeper %v under %s\n", who, z.servers, z.root)
	return s, conn.Close, nil
}
