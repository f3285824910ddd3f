package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/registry"
)

func init() { register(newRegistryCmd) }

func newRegistryCmd() *cobra.Command {
	c := parentCommand("registry", "export or import the registry's store, to switch the coordination backend",
		`Copy the registry's state (settings, every resource's record, the request
index) out of one store and into another: the embedded etcd, an etcd
cluster, a ZooKeeper ensemble. Both name the store with serve's own flags.

The export is JSON lines (fencegateExport.v1), streamed. The import never
lowers anything the target has and can be run again, or continued after an
interruption with --resume-after N. Copied or not, bump the fence range on
the new store before serve starts on it (fencegate fence-range bump with
the same flags): that is what puts every later fence above every fence the
old store issued. See docs/operations.md, "Switching the coordination
backend".`)
	c.AddCommand(newRegistryExportCmd(), newRegistryImportCmd())
	return c
}

// storeCmdFlags registers serve's store flags on a command that always
// acts on the store, each settable through FENCEGATE_* as serve's are.
func storeCmdFlags(c *cobra.Command, s *storeOptions) {
	s.flags(c.Flags(), "the embedded etcd of serve's --data-dir DIR (serve stopped)")
	bindEnv(c.Flags(), "data-dir", "etcd-endpoints", "etcd-prefix", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-user", "etcd-password-file", "etcd-password",
		"zookeeper", "zookeeper-root", "zookeeper-cacert", "zookeeper-cert", "zookeeper-key", "zookeeper-user", "zookeeper-password-file", "zookeeper-password")
}

func newRegistryExportCmd() *cobra.Command {
	s := &storeOptions{}
	var out string
	c := &cobra.Command{
		Use:   "export [store flags] [--out FILE]",
		Short: "write the store's settings, records and request index as JSON lines",
		Long: `Write the store's settings, records and request index as JSON lines
(fencegateExport.v1) to --out or stdout, page by page. Stop serve first: a
store being written to is exported page by page, not as one snapshot (the
bump that follows every switch covers what moved meanwhile).`,
		Example: `  fencegate registry export --data-dir /var/lib/fencegate --out registry.jsonl
  fencegate registry export --etcd-endpoints https://etcd-1:2379 --etcd-cacert ca.pem > registry.jsonl`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := s.checkDirect(); err != nil {
				return err
			}
			if err := s.load(); err != nil {
				return err
			}
			w, done, err := createOut(out, c.OutOrStdout())
			if err != nil {
				return err
			}
			const who = "fencegate registry export"
			err = withStore(c.Context(), s, who, c.ErrOrStderr(), true, func(st registry.Store) error {
				n, err := registry.Export(c.Context(), st, w)
				if err == nil {
					fmt.Fprintf(c.ErrOrStderr(), "%s: %d gate keys, %d records, %d request entries (store revision %d)\n", who, n.Keys, n.Records, n.Requests, n.Revision)
				}
				return err
			})
			return errors.Join(err, done())
		},
	}
	storeCmdFlags(c, s)
	c.Flags().StringVar(&out, "out", "-", "file to write (created, never overwritten), or - for stdout")
	return c
}

// createOut opens the export's destination: a new file, or stdout.
func createOut(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	return f, func() error {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}

func newRegistryImportCmd() *cobra.Command {
	s := &storeOptions{}
	var in string
	var resumeAfter int
	c := &cobra.Command{
		Use:   "import [store flags] [--in FILE] [--resume-after N]",
		Short: "apply an export to a store, never lowering what it has",
		Long: `Apply an export (fencegate registry export) to the store: what it lacks is
created, what is equal is left alone, and where it has its own record the
higher floor and policy generation are kept. Running it again changes
nothing; an interrupted import says how many lines it applied, and
--resume-after N continues from there (any smaller N is safe too).
Afterwards, bump the fence range on this store before serve starts on it.`,
		Example: `  fencegate registry import --zookeeper zk-1:2181,zk-2:2181 --in registry.jsonl
  fencegate registry import --zookeeper zk-1:2181 --in registry.jsonl --resume-after 120000
  fencegate fence-range bump --zookeeper zk-1:2181,zk-2:2181 --note "switch to ZooKeeper, CHG-12"`,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := s.checkDirect(); err != nil {
				return err
			}
			if resumeAfter < 0 {
				return usagef("--resume-after N: the lines an interrupted import applied, 0 or more")
			}
			if err := s.load(); err != nil {
				return err
			}
			r, done, err := openIn(in, c.InOrStdin())
			if err != nil {
				return err
			}
			defer done()
			return withStore(c.Context(), s, "fencegate registry import", c.ErrOrStderr(), false, func(st registry.Store) error {
				return runImport(c.Context(), st, r, resumeAfter, c.ErrOrStderr())
			})
		},
	}
	storeCmdFlags(c, s)
	c.Flags().StringVar(&in, "in", "-", "the export to read, or - for stdin")
	c.Flags().IntVar(&resumeAfter, "resume-after", 0, "lines an interrupted import already applied (it printed them): check them, do not apply them again")
	return c
}

func openIn(path string, stdin io.Reader) (io.Reader, func() error, error) {
	if path == "-" {
		return bufio.NewReader(stdin), func() error { return nil }, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--in: %w", err)
	}
	return f, f.Close, nil
}

// runImport imports and reports: progress every ImportProgressLines
// lines, the counts at the end, and on any failure the line to resume
// after.
func runImport(ctx context.Context, st registry.Store, r io.Reader, resumeAfter int, stderr io.Writer) error {
	const who = "fencegate registry import"
	rep, err := registry.Import(ctx, st, r, registry.ImportOptions{ResumeAfter: resumeAfter, Progress: func(p registry.ImportReport) {
		fmt.Fprintf(stderr, "%s: applied through line %d\n", who, p.Line)
	}})
	fmt.Fprintf(stderr, "%s: settings %s; gate keys: %s; records: %s; request entries: %d added, %d same, %d kept\n", who, orNone(rep.Settings), counts(rep.Keys),
		counts(rep.Records), rep.Requests.Added, rep.Requests.Same, rep.Requests.Kept)
	if err != nil {
		return fmt.Errorf("%w\n(lines 1 to %d are applied: run again with --resume-after %d to continue)", err, rep.Line, rep.Line)
	}
	fmt.Fprintf(stderr, "%s: complete (%d lines). Now bump the fence range on this store before serve starts on it:\n  fencegate fence-range bump --note TEXT with these store flags\n", who, rep.Line)
	return nil
}

func counts(c registry.ImportCounts) string {
	return fmt.Sprintf("%d added, %d same, %d raised, %d kept", c.Added, c.Same, c.Raised, c.Kept)
}

func orNone(s string) string {
	if s == "" {
		return "not in the lines applied"
	}
	return s
}
