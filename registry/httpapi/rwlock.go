package httpapi

import (
	"context"
	"net/http"

	"github.com/fencegate/fencegate/wire"
)

// The read/write lock (issue 46) needs one call of its own: a read
// acquire is /v1/acquire with mode "read", and a reader's lease renews,
// releases and answers status under its resource NAME/_read, authorized
// as NAME (wire.RecordName): who may acquire NAME may read it.

// downgrade is POST /v1/downgrade: the caller's write lease on a
// resource becomes a reader's lease (Registry.Downgrade), answered as an
// acquire is.
func (s *Server) downgrade(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.DowngradeRequest](body)
	if err == nil {
		noteResource(ctx, req.Resource)
		err = s.authorize(ctx, r.URL.Path, caller, VerbAcquire, req.Resource)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	is, err := s.cfg.Registry.Downgrade(ctx, caller, *req)
	if err != nil {
		return nil, err
	}
	noteFence(ctx, is.Grant.FenceToken)
	return issuedResponse(is)
}
