package wire

import (
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/grant"
)

// A read/write lock NAME (issue 46) is NAME's one record with a writer
// (its exclusive lease, the ordinary grant on NAME with the next fence)
// and any number of readers. A reader's lease is an ordinary grant on
// the derived resource ReadResource(NAME) = NAME + "/_read", carrying
// the fence of the last writer it saw and no fence of its own: since a
// gate protecting NAME refuses a grant naming another resource, a
// reader's grant can never open NAME's gate for a mutation. Renewing,
// releasing and querying a reader's lease name ReadResource(NAME); the
// registry resolves it to NAME's record.
//
// The last segment ReadSegment is reserved: a plain acquire, a
// semaphore or a lock set naming such a resource is refused
// (ErrInvalid).
const (
	// ModeRead is AcquireRequest.Mode for a reader's lease.
	ModeRead = "read"
	// ReadSegment is the last segment of a reader's resource name.
	ReadSegment = "_read"
)

// ReadResource returns the resource name a reader's grant on name
// carries.
func ReadResource(name string) string { return name + "/" + ReadSegment }

// ReadOf reports whether resource is a reader's resource name, and if
// so the read/write lock's name.
func ReadOf(resource string) (name string, ok bool) {
	name, ok = strings.CutSuffix(resource, "/"+ReadSegment)
	return name, ok && name != ""
}

// RecordName is the resource whose record holds resource's leases: the
// lock's name for a reader's resource, resource itself otherwise.
func RecordName(resource string) string {
	if name, ok := ReadOf(resource); ok {
		return name
	}
	return resource
}

// ValidateMode checks an acquire's mode: "" or ModeRead, a reader on a
// plain lock's name (no Permits) whose reader resource is canonical.
func ValidateMode(req AcquireRequest) error {
	switch req.Mode {
	case "":
		return nil
	case ModeRead:
	default:
		return fmt.Errorf("%w: mode %q: \"\" (exclusive, a writer) or %q", ErrInvalid, req.Mode, ModeRead)
	}
	if req.Permits > 0 {
		return fmt.Errorf("%w: mode %q: a semaphore has no readers", ErrInvalid, req.Mode)
	}
	if err := grant.ValidateResource(ReadResource(req.Resource)); err != nil {
		return fmt.Errorf("%w: resource %s: its reader resource would not be canonical: %v", ErrInvalid, req.Resource, err)
	}
	return nil
}

// DowngradeRequest is POST /v1/downgrade and the registry's Downgrade:
// the writer's lease Lease on Resource becomes a reader's lease in one
// write. The write lease ends (RELEASED) and the same owner is granted a
// reader's lease on ReadResource(Resource) under RequestID (its
// idempotency key, as an acquire's: a retry answers the same reader's
// grant), with the same fence, the same TTL, operation and class. No
// queued writer can get in between; other readers are admitted only
// once every HELD statement issued for the write lease has expired.
type DowngradeRequest struct {
	Resource  string `json:"resource"`
	Lease     string `json:"lease"`
	RequestID string `json:"requestId"`
}
