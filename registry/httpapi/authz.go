package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/fencegate/fencegate/wire"
)

// Verb is what an identity may do to a resource under a resource policy.
type Verb string

// The verbs. Admin powers (floors, epoch revocation, policy generations,
// the operator's view, resuming a gate) are not verbs: they belong to the
// admin role (Config.Admins), registry-wide.
const (
	// VerbAcquire: acquire a resource's lease, renew and release it, and
	// query one's own acquire by request ID.
	VerbAcquire Verb = "acquire"
	// VerbSee: read-only views of a resource: a grant's status query
	// (POST /v1/status), the dashboard's rows and a gate's views of it,
	// and a gate's report about it.
	VerbSee Verb = "see"
	// VerbBreak: end whoever's lease on the resource now and hand it to
	// the next waiter (POST /v1/break); admins may always.
	VerbBreak Verb = "break"
)

// Verbs lists every verb, in the order documentation shows them.
var Verbs = []Verb{VerbAcquire, VerbSee, VerbBreak}

// ErrForbiddenResource: no rule of the resource policy lets an identity
// do a verb to a resource. Every refusal is a *ForbiddenError wrapping it;
// the wire code is CodeForbiddenResource.
var ErrForbiddenResource = errors.New("httpapi: forbidden by the resource policy")

// ForbiddenError is one refusal by the resource policy, naming who, what
// and which resource.
type ForbiddenError struct {
	Identity string
	Verb     Verb
	Resource string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("httpapi: forbidden by the resource policy: %s may not %s %s", e.Identity, e.Verb, e.Resource)
}

// Unwrap makes errors.Is(err, ErrForbiddenResource) hold.
func (e *ForbiddenError) Unwrap() error { return ErrForbiddenResource }

// Authorizer decides whether an authenticated identity may do a verb to
// a resource: nil, or a *ForbiddenError. Implementations must be safe for
// concurrent use and must not block: they run on every call.
type Authorizer interface {
	Authorize(identity string, verb Verb, resource string) error
}

// AllowAll lets every authenticated identity acquire and see every
// resource: the registry's behaviour before resource policies. Breaking
// another's lock stays with the admins: an open registry is not one where
// any worker may end any other's lease. serve uses it only under an
// explicit --authz-open.
type AllowAll struct{}

// Authorize implements Authorizer.
func (AllowAll) Authorize(identity string, v Verb, resource string) error {
	if v == VerbBreak {
		return &ForbiddenError{Identity: identity, Verb: v, Resource: resource}
	}
	return nil
}

// AuditRefusal records one refusal by the resource policy in logger at
// INFO as msg "access refused", audit=true, with the identity, verb,
// resource, the call (path) and via (api or dashboard), so a log pipeline
// routes it with the admin actions.
func AuditRefusal(ctx context.Context, logger *slog.Logger, err *ForbiddenError, path, via string) {
	logger.LogAttrs(ctx, slog.LevelInfo, "access refused", slog.Bool("audit", true),
		slog.String("identity", err.Identity), slog.String("verb", string(err.Verb)), slog.String("resource", err.Resource),
		slog.String("path", path), slog.String("outcome", wire.CodeForbiddenResource), slog.String("via", via))
}
