//go:build unix

// Proves the wrapper under a lock set, against a real registry: the
// child learns the members and each member's grant from its environment
// (and no single grant), and is stopped the moment one member is broken
// at the registry — the whole set is lost — while the unbroken control
// runs on until told to stop; the envelope helper makes each member's
// envelope only when the call names the member, and settles per member.
package lockexec

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func newSetRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	key, err := grant.GenerateKey(grant.AlgEd25519, "lockexec-set-test", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(memstore.New(), registry.DefaultConfig(1), clock.System{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// The assertions are about events, not seconds: the broken run ends by
// itself (the test never tells it to stop; its context's 60 s is only a
// hang guard, and ending there fails the test), with the child stopped by
// SIGTERM for the loss; the control is still running after both members
// were renewed twice at the registry — past the renewal at which the
// broken run learns of the break — and ends only when the test tells it
// to, not lost.
func TestLockSetChildStoppedWhenOneMemberBroken(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "control: none broken", true: "lx/b broken"}[broken], func(t *testing.T) {
			reg := newSetRegistry(t)
			s := client.NewSession(registry.Direct{Registry: reg, Owner: "worker-1"}, client.Options{})
			out := &lockedBuf{}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard only
			defer cancel()
			type ran struct {
				res Result
				err error
			}
			done := make(chan ran, 1)
			script := `echo "set=$FENCEGATE_LOCKSET m0=$FENCEGATE_MEMBER_0_RESOURCE f1=$FENCEGATE_MEMBER_1_FENCE one=${FENCEGATE_RESOURCE-unset}"; echo started; exec sleep 120`
			go func() {
				res, err := Run(ctx, Config{Session: s, Request: wire.AcquireRequest{OperationID: "op", OperationClass: "lock", TTLMs: 3000},
					Set: []string{"lx/a", "lx/b"}, Command: "sh", Args: []string{"-c", script}, Grace: time.Second, ReleaseTimeout: time.Second,
					Stdout: out, Stderr: out, Log: out})
				done <- ran{res, err}
			}()
			for !strings.Contains(out.String(), "started") {
				select {
				case r := <-done:
					t.Fatalf("the run ended before its child started: %+v %v\n%s", r.res, r.err, out)
				case <-time.After(10 * time.Millisecond):
				}
			}
			if broken {
				if _, err := reg.Break(context.Background(), "lx/b"); err != nil {
					t.Fatal(err)
				}
			} else {
				renewedTwice(t, reg, done)
				cancel() // told to stop, while it still runs
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, out)
			}
			res, log := r.res, out.String()
			if !strings.Contains(log, "set=lx/a lx/b m0=lx/a f1=1 one=unset") {
				t.Fatalf("the child's environment:\n%s", log)
			}
			if res.ExitCode != 128+15 {
				t.Fatalf("the child exited %d; want it stopped by SIGTERM (its sleep never ends by itself)\n%s", res.ExitCode, log)
			}
			if !broken {
				if res.Lost || !strings.Contains(log, "told to stop") || strings.Contains(log, "no longer certain") {
					t.Fatalf("unbroken set: %+v; want the child stopped only because the wrapper was told to\n%s", res, log)
				}
				return
			}
			if ctx.Err() != nil || !res.Lost || res.LostState != client.StateExpired || !strings.Contains(log, "no longer certain (EXPIRED): stopping the child") || strings.Contains(log, "told to stop") {
				t.Fatalf("lx/b broken: %+v (context %v); want the child stopped for the set, EXPIRED, before anyone told the wrapper to stop\n%s", res, ctx.Err(), log)
			}
			if v, _ := reg.LockStatus(context.Background(), "lx/a"); v.Holder != nil {
				t.Fatalf("lx/a still held after the run: %+v", v.Holder)
			}
		})
	}
}

// renewedTwice waits until both members' leases have been renewed twice
// at the registry (each expiry moved on twice from the grant's), failing
// if the run ends first.
func renewedTwice[R any](t *testing.T, reg *registry.Registry, done <-chan R) {
	t.Helper()
	first := map[string]time.Time{}
	moves := map[string]int{}
	for moves["lx/a"] < 2 || moves["lx/b"] < 2 {
		for _, m := range []string{"lx/a", "lx/b"} {
			v, err := reg.LockStatus(context.Background(), m)
			if err != nil || v.Holder == nil {
				t.Fatalf("%s not held while the control runs: %+v %v", m, v.Holder, err)
			}
			if at, ok := first[m]; !ok || v.Holder.ExpiresAt.After(at) {
				if ok {
					moves[m]++
				}
				first[m] = v.Holder.ExpiresAt
			}
		}
		select {
		case r := <-done:
			t.Fatalf("the unbroken run ended by itself: %+v", r)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestLockSetHelperNamesTheMember(t *testing.T) {
	reg := newSetRegistry(t)
	s := client.NewSession(registry.Direct{Registry: reg, Owner: "worker-1"}, client.Options{})
	ls, err := s.AcquireSet(context.Background(), wire.LockSetRequest{Members: []string{"lx/b", "lx/a"}, OperationID: "op", OperationClass: "lock", TTLMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Release(context.Background())
	h, err := serveEnvelopes(filepath.Join(t.TempDir(), "s.sock"), ls.Leases())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hc := HelperClient(h.path)
	get := func(resource string) (int, gate.Mutation, HelperError) {
		q := url.Values{"seq": {"1"}, "payloadDigest": {gatetest.Payload("p").String()}}
		if resource != "" {
			q.Set("resource", resource)
		}
		resp, err := hc.Get("http://lock" + EnvelopePath + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m gate.Mutation
		var he HelperError
		if resp.StatusCode == http.StatusOK {
			_ = json.NewDecoder(resp.Body).Decode(&m)
		} else {
			_ = json.NewDecoder(resp.Body).Decode(&he)
		}
		return resp.StatusCode, m, he
	}
	if code, _, he := get(""); code != http.StatusBadRequest || !strings.Contains(he.Message, "lx/a lx/b") {
		t.Fatalf("no member named: %d %+v, want 400 naming the members", code, he)
	}
	if code, _, _ := get("lx/c"); code != http.StatusBadRequest {
		t.Fatalf("a resource the set does not hold: %d, want 400", code)
	}
	for _, r := range []string{"lx/a", "lx/b"} {
		code, m, he := get(r)
		l, _ := ls.Lease(r)
		if code != http.StatusOK || m.Resource != r || m.Lease != l.Grant().Lease || m.FenceToken != l.Fence() {
			t.Fatalf("%s: %d %+v %+v, want its own grant's envelope", r, code, m, he)
		}
	}
	if n := ls.Unsettled(); n != 2 {
		t.Fatalf("segment 1 of each member built: %d unsettled, want 2", n)
	}
	body := fmt.Sprintf(`{"resource":%q,"seq":1,"outcome":"ACCEPTED"}`, "lx/b")
	resp, err := hc.Post("http://lock"+SettlePath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var sa SettleAnswer
	_ = json.NewDecoder(resp.Body).Decode(&sa)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sa.Unsettled != 1 {
		t.Fatalf("settling lx/b's segment 1: %d %+v, want lx/a's still unsettled", resp.StatusCode, sa)
	}
	resp, err = hc.Get("http://lock" + LeasePath + "?resource=lx/b")
	if err != nil {
		t.Fatal(err)
	}
	var info LeaseInfo
	_ = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info.Resource != "lx/b" || strings.Join(info.LockSet, " ") != "lx/a lx/b" || info.State != string(client.StateHeld) {
		t.Fatalf("GET /v1/lease?resource=lx/b: %+v", info)
	}
	for _, r := range []string{"lx/a", "lx/b"} { // the release need not wait for lx/a's proof in this test
		l, _ := ls.Lease(r)
		l.Settle(1, gate.Accepted)
	}
}
