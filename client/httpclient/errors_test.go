// Proves that the transport's errors say each layer once and still
// answer errors.Is for the client's classes and the API error's code.
package httpclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/wire"
)

func TestTransportErrorsSayEachLayerOnce(t *testing.T) {
	refused := callError(&APIError{Status: http.StatusUnauthorized, Code: wire.CodeUnauthenticated, Message: "httpapi: no credentials"})
	lost := callError(errors.New(`httpclient: Post "http://r/v1/acquire": dial tcp: connection refused`))
	for _, c := range []struct {
		err  error
		is   []error
		want string
	}{
		{refused, []error{client.ErrRefused, &APIError{Code: wire.CodeUnauthenticated}}, "httpclient: UNAUTHENTICATED (401 Unauthorized): httpapi: no credentials"},
		{lost, []error{client.ErrOutcomeUnknown}, `httpclient: outcome unknown: Post "http://r/v1/acquire": dial tcp: connection refused`},
	} {
		if c.err.Error() != c.want {
			t.Errorf("%q, want %q", c.err, c.want)
		}
		if n := strings.Count(c.err.Error(), "client: "); n != 1 || strings.Count(c.err.Error(), "httpclient: ") != 1 {
			t.Errorf("%q: a layer said twice", c.err)
		}
		for _, target := range c.is {
			if !errors.Is(c.err, target) {
				t.Errorf("%q is not %v", c.err, target)
			}
		}
	}
}
