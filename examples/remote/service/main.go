// Command service is a protected service another process writes to over
// HTTP: each request carries the write's envelope, and the gate checks it
// inside the service's own transaction. POST /totals {"mutation": …,
// "total": N} with the worker's bearer token; the answer is {"outcome",
// "receipt"}. It trusts the registry's signed trust bundle and, as an
// example, one token (serve --dev's); a real service authenticates its
// callers with mTLS or its own tokens.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"
	"net/http"
	"strconv"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// callers maps a bearer token to the identity it proves.
var callers = map[string]string{"Bearer fencegate-dev-token": "dev"}

// Write is a request: the envelope and the value it is for.
type Write struct {
	Mutation *gate.Mutation `json:"mutation"`
	Total    int            `json:"total"`
}

// Answer is the gate's outcome and, when accepted, its receipt.
type Answer struct {
	Outcome gate.Outcome  `json:"outcome"`
	Receipt *gate.Receipt `json:"receipt,omitempty"`
}

func main() {
	ctx := context.Background()
	reg, err := httpclient.Connect(ctx, "http://127.0.0.1:7420") // for the trust bundle only
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlgate.OpenLocal(ctx, "service.db", reg.Verifier)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.DB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS totals (day TEXT PRIMARY KEY, total INT)"); err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /totals", func(w http.ResponseWriter, r *http.Request) {
		caller, ok := callers[r.Header.Get("Authorization")]
		var in Write
		if !ok || json.NewDecoder(r.Body).Decode(&in) != nil || in.Mutation == nil {
			http.Error(w, "who are you, and what is it?", http.StatusBadRequest)
			return
		}
		if in.Mutation.PayloadDigest != gate.DigestPayload([]byte(strconv.Itoa(in.Total))) {
			http.Error(w, "the envelope is for another payload", http.StatusBadRequest)
			return
		}
		rcpt, err := db.Apply(r.Context(), caller, in.Mutation, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO totals VALUES ('2026-07-19', ?)", in.Total)
			return err
		})
		a := Answer{Outcome: gate.OutcomeOf(err)}
		if gate.IsSuccess(err) {
			a.Receipt = &rcpt
		}
		if a.Outcome == "" {
			http.Error(w, err.Error(), http.StatusInternalServerError) // outcome unknown to the worker
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	})
	log.Print("service: listening on http://127.0.0.1:8091")
	log.Fatal(http.ListenAndServe("127.0.0.1:8091", nil))
}
