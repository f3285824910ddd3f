package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// version is set at release builds with
// -ldflags "-X main.version=v0.1.0"; otherwise the module version from
// the build info is used ("(devel)" for a build from a work tree).
var version = ""

// commit is set likewise (-X main.commit=…) where the build cannot stamp
// the VCS revision itself (a build outside the repository, -buildvcs=false).
var commit = ""

func buildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// versionString is "<version> (commit <rev>[, modified], <time>, <go>)"
// from build info: the module version (as `go install …@v0.1.0` records
// it, or the -X override), and the VCS revision stamped by go build.
func versionString(bi *debug.BuildInfo) string {
	v := version
	if v == "" && bi != nil {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	rev, at, modified := commit, "", false
	if rev == "" {
		rev = "unknown"
	}
	goVersion := runtime.Version()
	if bi != nil {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := v + " (commit " + rev
	if modified {
		out += ", modified"
	}
	if at != "" {
		out += ", " + at
	}
	return out + ", " + goVersion + ")"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version and the commit it was built from (same as --version)",
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "fencegate %s\n", c.Root().Version)
			return err
		},
	}
}
