// Proves a worker reads the service's receipt answers in gate's JSON
// form: the receipts come back whole (the resolver can reuse them), and
// an answer whose receipt was altered on the way is an error that no
// caller can mistake for a gate outcome of its own write.
package chaosproc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

func TestQueryOperationReadsGateAnswers(t *testing.T) {
	const res, op = "chaos/res-1", "worker-01-op1"
	r := gate.Receipt{Resource: res, FenceToken: 3, OperationRoot: grant.OperationRoot(res, op), OperationID: op, SegmentSeq: 1,
		PayloadDigest: sha256.Sum256([]byte("p")), GrantDigest: sha256.Sum256([]byte("g")),
		AcceptedAt: time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC), Mode: gate.ModeEnforce, Outcome: gate.Accepted}
	want := gate.Judge([]gate.Receipt{r}, 3, 3)
	body, _ := json.Marshal(want)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { w.Write(body) }))
	defer srv.Close()
	c := &ServiceClient{Base: srv.URL, Token: "t"}
	got, err := c.QueryOperation(context.Background(), res, op, 3)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("answer: %v\n%+v\n%+v", err, got, want)
	}
	body = bytes.Replace(body, []byte(`"segmentSeq":1`), []byte(`"segmentSeq":2`), 1)
	if _, err = c.QueryOperation(context.Background(), res, op, 3); err == nil || gate.OutcomeOf(err) != "" {
		t.Fatalf("an altered receipt: %v (outcome %q), want an error with no gate outcome", err, gate.OutcomeOf(err))
	}
}
