package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/fencegate/fencegate/internal/strictjson"
)

// RequestBytesMax bounds a request body, 64 KiB: far above any valid
// request (identifiers are a few hundred bytes), low enough that a client
// cannot make the server buffer much.
const RequestBytesMax = 64 << 10

// ErrBadRequest: the request body is not one JSON object of the endpoint's
// request type (syntax, unknown or duplicate field, wrong type, trailing
// data, a missing required field). The wire code is CodeBadRequest.
var ErrBadRequest = errors.New("httpapi: bad request")

// ErrTooLarge: the request body is above RequestBytesMax
// (BatchRequestBytesMax for a batch), or a batch carries more than
// BatchOperationsMax operations. The wire code is CodeTooLarge.
var ErrTooLarge = errors.New("httpapi: request body too large")

// readBody reads at most bytesMax bytes of the body.
func readBody(r *http.Request, bytesMax int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(bytesMax)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	if len(b) > bytesMax {
		return nil, fmt.Errorf("%w: limit %d bytes", ErrTooLarge, bytesMax)
	}
	return b, nil
}

// DecodeRequest strictly decodes b into v (strictjson.Decode): exactly one
// JSON object, no unknown fields, no field given twice or in another
// letter case, no trailing data. Errors wrap
// ErrBadRequest (or ErrTooLarge). It is the one decoder every endpoint
// uses, and the fuzz target.
func DecodeRequest(b []byte, v any) error {
	if len(b) > RequestBytesMax {
		return fmt.Errorf("%w: limit %d bytes", ErrTooLarge, RequestBytesMax)
	}
	if err := strictjson.Decode(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}
