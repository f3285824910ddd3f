package httpclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fencegate/fencegate/wire"
)

// ListLockRows is ListLocks in the listing's lean form (GET
// /v1/locks?form=rows): what a table of locks shows, at about a quarter
// of the bytes and decoding. A registry from before the form answers
// it as a bad request (wire.CodeBadRequest).
func (c *Client) ListLockRows(ctx context.Context, prefix, after string, limit int) (wire.LockRows, error) {
	q := url.Values{"form": {wire.ListFormRows}}
	for k, v := range map[string]string{"prefix": prefix, "after": after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l wire.LockRows
	err := c.do(ctx, http.MethodGet, "/v1/locks?"+q.Encode(), nil, &l)
	return l, err
}
