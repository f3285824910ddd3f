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

func TestLockSetChildStoppedWhenOneMemberBroken(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "control: none broken", true: "lx/b broken"}[broken], func(t *testing.T) {
			reg := newSetRegistry(t)
			s := client.NewSession(registry.Direct{Registry: reg, Owner: "worker-1"}, client.Options{})
			out := &lockedBuf{}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // the control runs until then
			defer cancel()
			go func() {
				for !strings.Contains(out.String(), "started") {
					time.Sleep(10 * time.Millisecond)
				}
				if broken {
					if _, err := reg.Break(context.Background(), "lx/b"); err != nil {
						t.Error(err)
					}
				}
			}()
			script := `echo "set=$FENCEGATE_LOCKSET m0=$FENCEGATE_MEMBER_0_RESOURCE f1=$FENCEGATE_MEMBER_1_FENCE one=${FENCEGATE_RESOURCE-unset}"; echo started; exec sleep 30`
			start := time.Now()
			res, err := Run(ctx, Config{Session: s, Request: wire.AcquireRequest{OperationID: "op", OperationClass: "lock", TTLMs: 3000},
				Set: []string{"lx/a", "lx/b"}, Command: "sh", Args: []string{"-c", script}, Grace: time.Second, ReleaseTimeout: time.Second,
				Stdout: out, Stderr: out, Log: out})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out.String(), "set=lx/a lx/b m0=lx/a f1=1 one=unset") {
				t.Fatalf("the child's environment:\n%s", out)
			}
			if !broken {
				if res.Lost || time.Since(start) < 3500*time.Millisecond {
					t.Fatalf("unbroken set: %+v after %s; want the child running until the wrapper was told to stop", res, time.Since(start))
				}
				return
			}
			if !res.Lost || res.LostState != client.StateExpired || time.Since(start) > 2500*time.Millisecond {
				t.Fatalf("lx/b broken: %+v after %s; want the child stopped for the set, EXPIRED\n%s", res, time.Since(start), out)
			}
			if v, _ := reg.LockStatus(context.Background(), "lx/a"); v.Holder != nil {
				t.Fatalf("lx/a still held after the run: %+v", v.Holder)
			}
		})
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
