// This file holds the negative controls of the third-party story: what
// happens without httpcall's discipline. A retry under a fresh key (what a
// client that makes up a key per attempt does) charges twice, and an
// effect query that takes "not found" for absence lets A's delayed
// request charge after it was declared absent.
package thirdparty_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate/downstream/httpcall"
	"github.com/fencegate/fencegate/examples/thirdparty"
	"github.com/fencegate/fencegate/gate"
)

func post(t *testing.T, url, key string, amount int64) int {
	t.Helper()
	r := thirdparty.ChargeCall(url, "acme", amount)
	req, err := http.NewRequest(r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNegativeControlRetryUnderAFreshKeyChargesTwice(t *testing.T) {
	api := thirdparty.NewServer()
	ts := httptest.NewServer(api)
	defer ts.Close()
	post(t, ts.URL, "attempt-1", 100) // landed; its answer was lost
	post(t, ts.URL, "attempt-2", 100) // the retry makes up a new key
	if n := len(api.Charges()); n != 2 {
		t.Fatalf("%d charges: a fresh key per attempt should have charged twice; the control cannot fail", n)
	}
	post(t, ts.URL, "fg1-same", 100) // the derived key, sent twice
	post(t, ts.URL, "fg1-same", 100)
	if n := len(api.Charges()); n != 3 {
		t.Fatalf("%d charges: one key must charge once", n)
	}
}

// TestNegativeControlNotFoundIsNoProof runs the delayed-request story
// with an effect query that takes "not found" for absence without voiding
// the key: A's request, still on its way, charges after the recoverer was
// told it never would.
func TestNegativeControlNotFoundIsNoProof(t *testing.T) {
	var url string
	naive := func(ctx context.Context, in httpcall.Intent) (httpcall.Effect, error) {
		resp, err := http.Get(url + "/v1/charges?idempotency_key=" + in.Key)
		if err != nil {
			return httpcall.Effect{}, err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return httpcall.Effect{Verdict: gate.VerdictProvenAbsent}, nil
		}
		return httpcall.Effect{Verdict: gate.VerdictAccepted}, nil
	}
	s := newStory(t, true, naive)
	url = s.url
	v, late := s.run()
	c := s.api.Charges()
	if v != gate.VerdictProvenAbsent || late != http.StatusCreated || len(c) != 2 || c[0].Key != s.keyA {
		t.Fatalf("verdict %s, late %d, charges %+v: A's delayed request should have charged after it was declared absent; the control cannot fail", v, late, c)
	}
}
