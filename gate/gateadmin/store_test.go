// Proves the same recovery path on the gates that keep their own records,
// gate/objgate on an S3-compatible server and gate/redisgate on
// redis-server: through Store and through the HTTP endpoint mounted with
// HandlerConfig.Store, the paused resource shows its alarm, a refused
// resume changes nothing, and the resume is recorded with its operator
// and note.
package gateadmin_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gateadmin"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/gate/redisgate"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/redistest"
	"github.com/fencegate/fencegate/testkit/s3local"
)

// pauseOn applies fence 5, then a restored registry's fence 3 proven HELD
// a second later, through apply: FENCE_REGRESSION, the resource paused.
func pauseOn(t *testing.T, iss *gatetest.Issuer, apply func(m *gate.Mutation) error) {
	t.Helper()
	w := func(fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: resource, Owner: "worker-1", Lease: "l-" + op, OperationID: op, Fence: fence}
	}
	if err := apply(iss.Mutation(w(5, "op-a"), 1, "p")); err != nil {
		t.Fatal(err)
	}
	if err := apply(iss.Later(time.Second).Mutation(w(3, "op-restored"), 1, "p")); !errors.Is(err, gate.ErrFenceRegression) {
		t.Fatalf("fixture: want FENCE_REGRESSION, got %v", err)
	}
}

// recordingGates returns a paused objgate and a paused redisgate.
func recordingGates(t *testing.T) map[string]gateadmin.RecordingGate {
	ctx := context.Background()
	iss := gatetest.NewIssuer("gateadmin")
	clock := fakeclock.New(gatetest.T0.Add(2 * time.Second))
	c, bucket := s3local.NewBucket(t)
	og, err := objgate.Open(ctx, objgate.Config{Client: c, Bucket: bucket, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	pauseOn(t, iss, func(m *gate.Mutation) error {
		_, err := og.Apply(ctx, "worker-1", m, func(context.Context, objgate.Current) ([]byte, error) { return []byte("x"), nil })
		return err
	})
	rg, err := redisgate.New(redisgate.Config{Client: redistest.Client(t), Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock, Prefix: redistest.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	pauseOn(t, iss, func(m *gate.Mutation) error {
		_, err := rg.Apply(ctx, "worker-1", m, func(context.Context) ([]redisgate.Command, error) { return nil, nil })
		return err
	})
	return map[string]gateadmin.RecordingGate{"objgate": og, "redisgate": rg}
}

func TestStore(t *testing.T) {
	for name, g := range recordingGates(t) {
		t.Run(name, func(t *testing.T) {
			s := &gateadmin.Store{Gate: g}
			if _, err := s.Resume(context.Background(), gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: "n"}); !errors.Is(err, gateadmin.ErrInvalid) {
				t.Fatalf("resume without an operator: %v", err)
			}
			s.Operator = "alice"
			resumeContract(t, s, "alice")
		})
	}
}

func TestHandlerOnStore(t *testing.T) {
	auth, err := httpapi.ParseTokenFile([]byte(tokAdmin + " ops-admin\n" + tokWorker + " worker-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, g := range recordingGates(t) {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(gateadmin.Handler(gateadmin.HandlerConfig{Store: g, Auth: auth, Admins: []string{"ops-admin"}}))
			defer srv.Close()
			_, err := (&gateadmin.Client{Base: srv.URL, Token: tokWorker}).Resume(context.Background(), gateadmin.ResumeRequest{Resource: resource, Floor: 6, Note: "n"})
			var api *gateadmin.APIError
			if !errors.As(err, &api) || api.Code != gateadmin.CodeForbidden {
				t.Errorf("a worker's token: %v, want %s", err, gateadmin.CodeForbidden)
			}
			resumeContract(t, &gateadmin.Client{Base: srv.URL, Token: tokAdmin}, "ops-admin")
		})
	}
}
