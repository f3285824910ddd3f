// This file proves the probe tells a store that honours conditional
// writes from one that ignores them (a header-stripping proxy in front of
// the same store), and that Open refuses enforce mode on the latter with
// a clear error while shadow mode still works.
package objgate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

func TestProbe(t *testing.T) {
	ctx := context.Background()
	c, bucket := s3local.NewBucket(t)
	rep := objgate.ProbeDetail(ctx, c, bucket, "p/")
	if rep.Err != nil {
		t.Fatalf("the store failed the probe: %v (%+v)", rep.Err, rep.Steps)
	}
	if len(rep.Steps) != 5 {
		t.Fatalf("steps %+v", rep.Steps)
	}
	for _, s := range rep.Steps {
		t.Logf("%-40s want %s got %s", s.Name, s.Want, s.Got)
	}
}

func TestProbeRejectsStrippingProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, bucket := s3local.NewBucket(t)
	proxy, err := s3local.StripConditions(ctx, s3local.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	c := s3local.Client(proxy.URL, "fencegate", "fencegate-secret")
	err = objgate.Probe(ctx, c, bucket, "p/")
	if !errors.Is(err, objgate.ErrNoConditionalWrites) || !strings.Contains(err.Error(), "create again with If-None-Match") {
		t.Fatalf("probe through the stripping proxy: %v", err)
	}
	iss := gatetest.NewIssuer("probe")
	_, err = objgate.Open(ctx, objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier}})
	if !errors.Is(err, objgate.ErrNoConditionalWrites) {
		t.Fatalf("Open in enforce mode on a store without conditional writes: %v", err)
	}
	t.Logf("Open refused: %v", err)
	g, err := objgate.Open(ctx, objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier}, DefaultMode: gate.ModeShadow})
	if err != nil || g.Conditional() == nil {
		t.Fatalf("shadow mode must open and remember why it cannot enforce: %v", err)
	}
	if err := g.SetMode(ctx, "probe/one", gate.ModeEnforce, "ops"); !errors.Is(err, objgate.ErrNoConditionalWrites) {
		t.Fatalf("SetMode(enforce) on such a store: %v", err)
	}
}
