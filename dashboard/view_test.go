// Proves what the page shows of the registry itself: a resource acquired
// through the API appears at once with its holder, fence, lease time left
// and waiters, judged by the registry's clock (an expired lease shows as
// free, in lock-delay, before anything writes its expiry down); one granted elsewhere is
// found in the request index; the trust section names the issuer epoch,
// the revoked line and the bundle's generation; the live part alone is
// served for the script, and as server-sent events.
package dashboard_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/wire"
)

func TestPageShowsHoldersAndWaiters(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"resource":"` + resource + `","operationId":"op-1","operationClass":"settle","requestId":"r-1","ttlMs":10000}`
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/acquire", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokWorker)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("acquire: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	p := h.page()
	for _, want := range []string{`data-resource="` + resource + `"`, `<td class="holder">worker-1`, `<td class="fence">1</td>`, `<td class="left">9s</td>`} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// A second identity queues behind the holder (a waiting acquire).
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go h.reg.Acquire(ctx, "worker-2", wire.AcquireRequest{Resource: resource, OperationID: "op-2", OperationClass: "settle", RequestID: "r-2", WaitMs: 20000})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ri, err := h.reg.Resource(h.ctx, resource); err == nil && ri.Waiters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker-2 never queued")
		}
	}
	if p := h.page(); !strings.Contains(p, `<td class="waiters">1 <small>worker-2</small>`) {
		t.Errorf("the waiter is not shown:\n%s", p)
	}
}

func TestPageJudgesExpiryByTheRegistryClock(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.reg.Acquire(h.ctx, "worker-1", wire.AcquireRequest{Resource: resource, OperationID: "op", OperationClass: "settle", RequestID: "r-1", TTLMs: 10000}); err != nil {
		t.Fatal(err)
	}
	h.d.NoteResource(resource)
	if p := h.page(); !strings.Contains(p, `<td class="holder">worker-1`) {
		t.Fatalf("holder not shown:\n%s", p)
	}
	h.clk.Advance(8500 * time.Millisecond) // with page's second, half a second past the lease; nobody has written its expiry down
	if p := h.page(); !strings.Contains(p, `<td class="holder"><span class="muted">free</span>`) || !strings.Contains(p, `<td class="left">lock-delay 500ms</td>`) {
		t.Errorf("an expired lease is not shown as over, in lock-delay:\n%s", p)
	}
}

func TestPageFindsResourcesGrantedElsewhere(t *testing.T) {
	h := newHarness(t, nil)
	// Granted by the registry directly: no API call of this server named it.
	if _, err := h.reg.Acquire(h.ctx, "worker-3", wire.AcquireRequest{Resource: "elsewhere/r1", OperationID: "op", OperationClass: "settle", RequestID: "r-9"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.page(), "elsewhere/r1") {
		t.Fatal("shown before discovery")
	}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go h.d.Run(ctx) // discovers at start
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(h.page(), `data-resource="elsewhere/r1"`) {
		if time.Now().After(deadline) {
			t.Fatal("the request index scan did not find elsewhere/r1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p := h.page()
	if !strings.Contains(p, `id="issuer-epoch">7<`) || !strings.Contains(p, `id="revoked-below">0<`) {
		t.Errorf("trust section:\n%s", p)
	}
}

func TestLiveFragmentAndEvents(t *testing.T) {
	h := newHarness(t, nil)
	code, body, _ := h.do(http.MethodGet, "/ui/live", tokViewer, nil)
	if code != http.StatusOK || !strings.Contains(body, `id="attention"`) || strings.Contains(body, "<html") {
		t.Errorf("/ui/live: %d\n%s", code, body)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+"/ui/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokViewer)
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var event []string
	for sc.Scan() && sc.Text() != "" {
		event = append(event, sc.Text())
	}
	if len(event) < 2 || event[0] != "event: live" || !strings.HasPrefix(event[1], "data: ") || !strings.Contains(strings.Join(event, "\n"), `id="attention"`) {
		t.Errorf("first event:\n%s", strings.Join(event, "\n"))
	}
}
