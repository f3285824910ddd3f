// Proves serve's stuck thresholds for the dashboard: their defaults are
// the dashboard's, the environment sets them, zero is a usage error, and
// an empty exempt list (flag or variable) exempts no class.
package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fencegate/fencegate/dashboard"
)

// serveFlags parses args (and the environment) with serve's dashboard
// flags, as serve does, and runs their check.
func serveFlags(t *testing.T, args ...string) (dashboardOptions, error) {
	t.Helper()
	var d dashboardOptions
	c := &cobra.Command{Use: "serve", Run: func(*cobra.Command, []string) {},
		PreRunE: func(c *cobra.Command, _ []string) error { return applyEnv(c, os.LookupEnv) }}
	d.flags(c.Flags())
	bindEnv(c.Flags())
	c.SetArgs(args)
	c.SetOut(&strings.Builder{})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	return d, d.check()
}

func TestServeStuckThresholds(t *testing.T) {
	d, err := serveFlags(t)
	if err != nil || d.stuckWaitMs != dashboard.StuckWaitMsDefault || d.stuckHoldMs != dashboard.StuckHoldMsDefault || !slices.Equal(d.stuckExempt, []string{"lead"}) {
		t.Errorf("defaults: %+v %v", d, err)
	}
	t.Setenv("FENCEGATE_DASHBOARD_STUCK_WAIT_MS", "30000")
	t.Setenv("FENCEGATE_DASHBOARD_STUCK_EXEMPT_CLASS", "")
	d, err = serveFlags(t, "--dashboard-stuck-hold-ms", "7200000")
	if err != nil || d.stuckWaitMs != 30000 || d.stuckHoldMs != 7200000 || len(d.stuckExempt) != 0 {
		t.Errorf("from the environment and the command line: %+v %v", d, err)
	}
	if _, err := serveFlags(t, "--dashboard-stuck-hold-ms", "0"); err == nil || !strings.Contains(err.Error(), "--dashboard-stuck-hold-ms must be at least 1") {
		t.Errorf("a zero hold threshold: %v", err)
	}
}
