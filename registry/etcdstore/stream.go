package etcdstore

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Reads whose cost is bounded by their limit. etcd's Range counts every
// key from the start of the range to its end, whatever the limit, to
// answer its Count: a page of 100 records at the front of 100,000 cost
// 20.8 ms where it cost 0.56 ms alone (issue 49). Its RangeStream (3.7)
// answers in chunks (10 keys, then doubling up to about MaxRequestBytes)
// and counts nothing when no limit is asked; a read that takes chunks
// until it has its limit and then hangs up costs what it read, a constant
// factor over the limit, at any size of the range.

// Over gRPC the member sends chunks ahead of the reader as far as the
// stream's flow-control window lets it; grpc-go's default window grows
// with the link's bandwidth-delay product (to megabytes), so a page read
// at the front of 100,000 records had the member read thousands more,
// which cost more than counting them. A fixed window bounds what the
// member reads ahead of a reader that hangs up.
const (
	// StreamWindowBytes is each stream's flow-control window, 64 KiB
	// (gRPC's initial window; a fixed one turns the growing one off).
	StreamWindowBytes = 64 << 10
	// ConnWindowBytes is the connection's, shared by its streams: 4 MiB.
	ConnWindowBytes = 4 << 20
)

// dialOptions are the gRPC options of every client this package dials.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(StreamWindowBytes), grpc.WithInitialConnWindowSize(ConnWindowBytes)}
}

// noStream notes a member that has no RangeStream (etcd before 3.7): the
// store then reads with Range, whose cost grows with the range.
type noStream struct{ set atomic.Bool }

// rangeFirst reads the first limit keys of [from, end) (none if limit < 1), as
// one linearizable read pinned at one revision (RangeStream's contract),
// at a cost bounded by limit and not by the keys in the range.
func (s *Store) rangeFirst(ctx context.Context, from, end string, limit int) ([]*mvccpb.KeyValue, error) {
	if limit <= 0 {
		return nil, nil
	}
	if s.noStream.set.Load() {
		return s.rangeCounted(ctx, from, end, limit)
	}
	// The stream is read here, chunk by chunk, not through clientv3's
	// GetStream, whose reader runs ahead of its caller by a chunk.
	sctx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	read := new(atomic.Int64) // the in-process member counts what it read (pipeServer.Send)
	st, err := s.kv.RangeStream(context.WithValue(sctx, readCountKey{}, read), &pb.RangeRequest{Key: []byte(from), RangeEnd: []byte(end)}, grpc.WaitForReady(true))
	var out []*mvccpb.KeyValue
	for err == nil && len(out) < limit {
		var r *pb.RangeStreamResponse
		if r, err = st.Recv(); err == nil && r.GetRangeResponse() != nil {
			out = append(out, r.GetRangeResponse().Kvs...)
		}
	}
	hangUp()
	if p, ok := st.(pipeClient); ok {
		<-p.p.done // the in-process handler has ended: read counts all it read
	}
	s.recordsRead.Add(uint64(max(read.Load(), int64(len(out)))))
	switch {
	case err == nil:
		return out[:limit], nil
	case errors.Is(err, io.EOF):
		return out, nil
	case unimplemented(err) && len(out) == 0:
		s.noStream.set.Store(true)
		return s.rangeCounted(ctx, from, end, limit)
	}
	return nil, readErr(ctx, err)
}

// rangeCounted is rangeFirst with Range: the whole range is counted.
func (s *Store) rangeCounted(ctx context.Context, from, end string, limit int) ([]*mvccpb.KeyValue, error) {
	resp, err := s.c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	s.recordsRead.Add(uint64(max(resp.Count, int64(len(resp.Kvs))))) // the member visited every key it counted
	return resp.Kvs, nil
}

// readCountKey carries, in a stream's context, the count of records the
// in-process member read for it.
type readCountKey struct{}

// RecordsRead is how many records this store's bounded reads (listing
// pages, sweep windows) have had the member read or visit: every key a
// Range counted, every record the in-process member streamed, or, over
// gRPC, every record received (the member may have read up to a
// stream window more). A page of limit records adds about limit to it
// at any size of the range; a counted Range adds the range.
func (s *Store) RecordsRead() uint64 { return s.recordsRead.Load() }

// readErr reads err as clientv3 would (rpctypes, or the context's own
// error once it ended), as txn does.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = status.FromContextError(err).Err()
	}
	return rpctypes.Error(err)
}

func unimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

// streamingKV is the in-process key-value client with RangeStream, which
// etcd's adapter (KvServerToKvClient) leaves unimplemented: the server's
// handler runs on its own goroutine and hands each chunk over when the
// reader asks for it. The handler reads a chunk before it sends it, so a
// send returns only once the reader asks for the next: a reader that
// hangs up after the chunk that completed its page has the member read
// nothing more, by design rather than by how fast the hang-up reaches a
// handler already reading the next (doubled) chunk.
type streamingKV struct {
	pb.KVClient
	srv pb.KVServer
}

func (k streamingKV) RangeStream(ctx context.Context, in *pb.RangeRequest, _ ...grpc.CallOption) (pb.KV_RangeStreamClient, error) {
	p := &pipe{ctx: ctx, chunks: make(chan *pb.RangeStreamResponse), want: make(chan struct{}), done: make(chan struct{})}
	go func() {
		p.err = k.srv.RangeStream(in, pipeServer{p})
		close(p.done)
	}()
	return pipeClient{p}, nil
}

// pipe carries one in-process stream's chunks; err is the handler's
// answer, read once done is closed. want carries the reader's ask for
// the chunk after the one it has. The caller ends the stream by ending
// ctx.
type pipe struct {
	ctx    context.Context
	chunks chan *pb.RangeStreamResponse
	want   chan struct{}
	done   chan struct{}
	err    error
	asked  bool // the reader has received a chunk: its next Recv asks for another
}

// pipeServer is the handler's side.
type pipeServer struct{ p *pipe }

// Send hands r over and returns once the reader asks for the next chunk.
func (s pipeServer) Send(r *pb.RangeStreamResponse) error {
	if n, ok := s.p.ctx.Value(readCountKey{}).(*atomic.Int64); ok {
		n.Add(int64(len(r.GetRangeResponse().GetKvs())))
	}
	select {
	case s.p.chunks <- r:
	case <-s.p.ctx.Done():
		return status.FromContextError(s.p.ctx.Err()).Err()
	}
	select {
	case <-s.p.want:
		return nil
	case <-s.p.ctx.Done():
		return status.FromContextError(s.p.ctx.Err()).Err()
	}
}
func (s pipeServer) SetHeader(metadata.MD) error  { return nil }
func (s pipeServer) SendHeader(metadata.MD) error { return nil }
func (s pipeServer) SetTrailer(metadata.MD)       {}
func (s pipeServer) Context() context.Context     { return s.p.ctx }
func (s pipeServer) SendMsg(m any) error {
	r, ok := m.(*pb.RangeStreamResponse)
	if !ok {
		return status.Errorf(codes.Internal, "etcdstore: in-process stream sends %T", m)
	}
	return s.Send(r)
}
func (s pipeServer) RecvMsg(any) error { return io.EOF }

// pipeClient is the caller's side. Its Recv is called from one
// goroutine, as a gRPC stream's is.
type pipeClient struct{ p *pipe }

func (c pipeClient) Recv() (*pb.RangeStreamResponse, error) {
	if c.p.asked {
		select {
		case c.p.want <- struct{}{}:
		case <-c.p.done:
		case <-c.p.ctx.Done():
		}
	}
	select {
	case r := <-c.p.chunks:
		c.p.asked = true
		return r, nil
	case <-c.p.done:
		if c.p.err != nil {
			return nil, c.p.err
		}
		return nil, io.EOF
	case <-c.p.ctx.Done():
		return nil, status.FromContextError(c.p.ctx.Err()).Err()
	}
}
func (c pipeClient) Header() (metadata.MD, error) { return nil, nil }
func (c pipeClient) Trailer() metadata.MD         { return nil }
func (c pipeClient) CloseSend() error             { return nil }
func (c pipeClient) Context() context.Context     { return c.p.ctx }
func (c pipeClient) SendMsg(any) error            { return nil }
func (c pipeClient) RecvMsg(any) error {
	return status.Error(codes.Unimplemented, "etcdstore: in-process stream: use Recv")
}
