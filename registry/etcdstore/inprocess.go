package etcdstore

import (
	"context"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"google.golang.org/grpc"
)

// In-process calls. Over gRPC, stopping the member first drains the
// calls in flight (GracefulStop) and refuses new ones; a call made in
// process runs on its caller's goroutine inside the server and would
// not be drained: one still reading when the backend closes would find
// no bolt transaction. Every key-value call of InProcess's client and
// store therefore passes callGate, which Close shuts and drains before
// it stops the member. Watches need no gate: cancelling one touches only
// memory.

// callGate counts the in-process calls in flight; once shut it refuses
// new ones.
type callGate struct {
	mu     sync.Mutex
	shut   bool
	flight sync.WaitGroup
}

// enter admits a call (the caller runs it and then calls exit), or
// refuses it with the error a stopped member's gRPC server gives.
func (g *callGate) enter() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		return rpctypes.ErrGRPCStopped
	}
	g.flight.Add(1)
	return nil
}

func (g *callGate) exit() { g.flight.Done() }

// shutAndDrain refuses every call from now on and returns once the calls
// in flight have returned (while the member still serves them).
func (g *callGate) shutAndDrain() {
	g.mu.Lock()
	g.shut = true
	g.mu.Unlock()
	g.flight.Wait()
}

// gatedKV is the member's key-value server behind the gate.
type gatedKV struct {
	pb.UnimplementedKVServer // every method is gatedKV's own
	kv                       pb.KVServer
	gate                     *callGate
}

// through runs one unary call past the gate.
func through[Req, Resp any](g *callGate, ctx context.Context, r Req, call func(context.Context, Req) (Resp, error)) (Resp, error) {
	if err := g.enter(); err != nil {
		var none Resp
		return none, err
	}
	defer g.exit()
	return call(ctx, r)
}

func (k gatedKV) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return through(k.gate, ctx, r, k.kv.Range)
}

func (k gatedKV) RangeStream(r *pb.RangeRequest, stream grpc.ServerStreamingServer[pb.RangeStreamResponse]) error {
	if err := k.gate.enter(); err != nil {
		return err
	}
	defer k.gate.exit()
	return k.kv.RangeStream(r, stream)
}

func (k gatedKV) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	return through(k.gate, ctx, r, k.kv.Put)
}

func (k gatedKV) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	return through(k.gate, ctx, r, k.kv.DeleteRange)
}

func (k gatedKV) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return through(k.gate, ctx, r, k.kv.Txn)
}

func (k gatedKV) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	return through(k.gate, ctx, r, k.kv.Compact)
}

// InProcess returns a client of this member that calls its server in
// this process (etcd's v3client: no socket, no gRPC encoding on either
// side) and the Option with which New's store sends its transactions the
// same way; pass both to New. A commit so saves a loopback gRPC exchange
// each way (docs/performance.md, "One hop"). Their key-value calls are
// drained by Close and refused after it (rpctypes.ErrStopped). Close the
// client before the member.
func (e *Embedded) InProcess() (*clientv3.Client, Option) {
	srv := gatedKV{kv: v3rpc.NewQuotaKVServer(e.etcd.Server), gate: &e.calls}
	kv := streamingKV{KVClient: adapter.KvServerToKvClient(srv), srv: srv}
	c := v3client.New(e.etcd.Server)
	c.KV = clientv3.NewKVFromKVClient(kv, c)
	return c, func(o *Options) { o.kv = kv }
}
