package zkstore

import (
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// ZooKeeper's limit on a request: jute.maxbuffer. A server reads the
// length of each request before the request, and one above its
// jute.maxbuffer (1 MiB less a byte unless set) is not refused: the
// server closes the connection it came on ("Len error"), so every call
// in flight on the session fails with it, and the client resends the
// request once it has reconnected, and is cut again. A commit grows with
// its resource's record (each waiter adds its identity, request and
// operation IDs: about 170 bytes), so a long enough queue on one
// resource reached it (TestRequestAboveJuteMaxBufferIsRefused: at 8 KiB,
// the 25th waiter cut every waiter's long poll, UNAVAILABLE).
//
// So a commit whose request may exceed the ensemble's jute.maxbuffer is
// refused unsent, with wire.ErrStoreFull naming the limit: nothing is
// applied, and nothing else on the session is disturbed. Reads and the
// writes that shrink a record (a release, a renewal) go on.

// JuteMaxBufferDefault is ZooKeeper's default jute.maxbuffer, bytes;
// JuteMaxBufferMin and JuteMaxBufferMax bound what WithJuteMaxBuffer
// may be told: 4 KiB (a record with a few waiters) to 1 GiB.
const (
	JuteMaxBufferDefault = 0xfffff
	JuteMaxBufferMin     = 4 << 10
	JuteMaxBufferMax     = 1 << 30
)

// requestHeadBytes bounds, from above, what a multi request adds to its
// operations' paths and data: the length prefix, the request header and
// the multi's closing header, 64 bytes.
const requestHeadBytes = 64

// opHeadBytes bounds, from above, what one operation of a multi adds to
// its path and data: its header (type, done, error), the path's and the
// data's length prefixes, a version and flags, 32 bytes.
const opHeadBytes = 32

// aclBytes bounds one ACL entry beside its scheme and ID: permissions
// and two length prefixes.
const aclBytes = 12

// WithJuteMaxBuffer tells the store its ensemble's jute.maxbuffer, in
// bytes (the servers' -Djute.maxbuffer; at most what every server of the
// ensemble takes; JuteMaxBufferMin to JuteMaxBufferMax). Optional,
// defaults to JuteMaxBufferDefault, ZooKeeper's own default.
func WithJuteMaxBuffer(bytes int) Option { return func(s *Store) { s.juteMax = bytes } }

// requestBytes bounds from above the encoded size of a multi of ops.
func requestBytes(ops []any) int {
	n := requestHeadBytes
	acls := func(as []zk.ACL) int {
		m := 4
		for _, a := range as {
			m += aclBytes + len(a.Scheme) + len(a.ID)
		}
		return m
	}
	for _, op := range ops {
		n += opHeadBytes
		switch o := op.(type) {
		case *zk.CreateRequest:
			n += len(o.Path) + len(o.Data) + acls(o.Acl)
		case *zk.SetDataRequest:
			n += len(o.Path) + len(o.Data)
		case *zk.DeleteRequest:
			n += len(o.Path)
		case *zk.CheckVersionRequest:
			n += len(o.Path)
		default:
			n += 1 << 30 // an operation this bound does not know: refuse rather than guess
		}
	}
	return n
}

// checkRequestSize refuses ops whose multi may exceed the ensemble's
// jute.maxbuffer.
func (s *Store) checkRequestSize(ops []any) error {
	limit := s.juteMax
	if limit <= 0 {
		limit = JuteMaxBufferDefault
	}
	if n := requestBytes(ops); n > limit {
		return fmt.Errorf("%w: %w: zkstore: the commit's request is up to %d bytes, above the ensemble's jute.maxbuffer (%d bytes): ZooKeeper would drop the connection over it; nothing was sent (a resource's record grows with its queue: fewer waiters a resource, or a larger jute.maxbuffer on every server and zkstore.WithJuteMaxBuffer)",
			wire.ErrStoreFull, registry.ErrTooLarge, n, limit)
	}
	return nil
}
