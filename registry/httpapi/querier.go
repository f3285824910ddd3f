package httpapi

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/grant"
)

// QueryStatus makes Client a gate.StatusQuerier: the linearizable status
// query (POST /v1/status) about g, answering its state and the issuer
// epoch of the statement. Give the gate's client WithVerifier, so that
// every answer's proof is checked against the gate's trust bundle, and
// use it over mTLS or a bearer token of the gate's own identity. A
// statement about another grant is ErrBadResponse; any error means
// "cannot prove HELD", which the gate never accepts on.
func (c *Client) QueryStatus(ctx context.Context, g *grant.Grant) (grant.State, uint64, error) {
	is, err := c.Status(ctx, g.Encode())
	if err != nil {
		return "", 0, err
	}
	if is.Status.Grant != g.Digest() {
		return "", 0, fmt.Errorf("%w: status is about grant %s, not %s", ErrBadResponse, is.Status.Grant, g.Digest())
	}
	return is.Status.State, is.Status.IssuerEpoch, nil
}
