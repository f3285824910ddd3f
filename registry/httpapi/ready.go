package httpapi

import (
	"context"
	"fmt"
	"net/http"
)

// Ready calls GET /readyz: nil when the server answers and its store
// serves a linearizable read, else the cause (unreachable, or the
// store's error). Client tools use it to fail fast, with the reason,
// instead of retrying against a registry that is not there.
func (c *Client) Ready(ctx context.Context) error {
	var h Health
	err := c.do(ctx, http.MethodGet, "/readyz", nil, &h)
	if err != nil {
		return fmt.Errorf("httpapi: registry %s not ready: %w", c.base, err)
	}
	return nil
}
