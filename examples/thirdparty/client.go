package thirdparty

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/fencegate/fencegate/downstream/httpcall"
	"github.com/fencegate/fencegate/gate"
)

// ChargeCall is the request that charges account amountCents on the API
// at baseURL: the segment's one call (its Digest is the envelope's
// payload digest).
func ChargeCall(baseURL, account string, amountCents int64) httpcall.Request {
	body, _ := json.Marshal(ChargeRequest{Account: account, AmountCents: amountCents})
	return httpcall.Request{Method: http.MethodPost, URL: baseURL + "/v1/charges",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// EffectQuery is the API's effect query for httpcall: GET the charge by
// idempotency key; if there is none, void the key, which the API does
// atomically with its own check, so a call with the key that is still on
// its way can never charge. It sends no charge request.
//
//   - found, or the void answers that the key took effect → ACCEPTED
//   - voided → PROVEN_ABSENT
//   - anything else (the API unreachable, a 5xx) → an error: ask again later
func EffectQuery(baseURL string, c *http.Client) httpcall.EffectQuery {
	return func(ctx context.Context, in httpcall.Intent) (httpcall.Effect, error) {
		status, body, err := do(ctx, c, http.MethodGet, baseURL+"/v1/charges?idempotency_key="+url.QueryEscape(in.Key))
		switch {
		case err != nil:
			return httpcall.Effect{}, err
		case status == http.StatusOK:
			return httpcall.Effect{Verdict: gate.VerdictAccepted, Body: body}, nil
		case status != http.StatusNotFound:
			return httpcall.Effect{}, fmt.Errorf("thirdparty: lookup answered %d: %s", status, body)
		}
		status, body, err = do(ctx, c, http.MethodPost, baseURL+"/v1/idempotency-keys/"+url.PathEscape(in.Key)+"/void")
		switch {
		case err != nil:
			return httpcall.Effect{}, err
		case status == http.StatusOK:
			return httpcall.Effect{Verdict: gate.VerdictProvenAbsent}, nil
		case status == http.StatusConflict:
			return httpcall.Effect{Verdict: gate.VerdictAccepted, Body: body}, nil // it landed meanwhile
		}
		return httpcall.Effect{}, fmt.Errorf("thirdparty: void answered %d: %s", status, body)
	}
}

func do(ctx context.Context, c *http.Client, method, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("thirdparty: %s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, body, err
}
