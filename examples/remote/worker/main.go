// Command worker writes to the service of ../service over HTTP under a
// lock: client.Send builds the envelope, the request carries it, and the
// service's answer settles it (a refusal comes back as the gate's error).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/wire"
)

func main() {
	ctx := context.Background()
	total := 400
	if len(os.Args) > 1 {
		total, _ = strconv.Atoi(os.Args[1])
	}
	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken("fencegate-dev-token"))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := w.Lock(ctx, wire.AcquireRequest{Resource: "totals/remote/2026-07-19"})
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	payload := []byte(strconv.Itoa(total))
	err = client.Send(ctx, lease, payload, func(ctx context.Context, m *gate.Mutation) error {
		body, _ := json.Marshal(map[string]any{"mutation": m, "total": total})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8091/totals", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer fencegate-dev-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err // no answer: the outcome is unknown
		}
		defer resp.Body.Close()
		var a struct{ Outcome gate.Outcome }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&a) != nil {
			return fmt.Errorf("service answered %s", resp.Status)
		}
		return a.Outcome.Err() // nil for ACCEPTED; a gate error otherwise
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote total=%d under fence %d\n", total, lease.Fence())
}
