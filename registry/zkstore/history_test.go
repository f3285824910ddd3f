package zkstore

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// TestReadOfALostTransactionIsReported replays what serve2 read in chaos
// seed 207 (chaos/testdata/zkopen207): the revision node at version 51 of
// the lost history (zxid 0x200000003), then at version 51 of the history
// the ensemble kept (0x300000008): the went-back it reported. Then a
// commit's look on the member that had reloaded its snapshot beyond its
// truncation (zk3) read chaos/res-1's record as transaction 0x200000003
// had left it, a fence-8 grant the ensemble never held, at the data
// version the leader's record reached again with serve1's fence 8; the
// grant of fence 9 decided on it passed the leader's version check. That
// record was never seen before by this Store and the revision node read
// with it is newer, so only the lost zxid tells: the look must fail with
// registry.ErrStoreWentBack. (Without history.lost it passed, and fence
// 9 was granted over a live fence 8.)
func TestReadOfALostTransactionIsReported(t *testing.T) {
	s := &Store{root: DefaultRoot}
	rec := s.recordPath("chaos/res-1")
	at := func(version int32, mzxid, czxid int64) node {
		return node{ok: true, data: []byte("x"), stat: zk.Stat{Version: version, Mzxid: mzxid, Czxid: czxid, Pzxid: czxid}}
	}
	call := func(nodes map[string]node) error {
		paths := make([]string, 0, len(nodes))
		for p := range nodes {
			paths = append(paths, p)
		}
		return s.hist.after(s, s.hist.before(s, paths), nodes)
	}
	if err := call(map[string]node{s.revPath(): at(51, 0x200000003, 0x100000001)}); err != nil {
		t.Fatalf("first read: %v", err)
	}
	if err := call(map[string]node{s.revPath(): at(51, 0x300000008, 0x100000001)}); !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("the revision node at version 51 with another zxid: %v, want registry.ErrStoreWentBack", err)
	}
	err := call(map[string]node{s.revPath(): at(52, 0x300000019, 0x100000001), rec: at(8, 0x200000003, 0x100000005)})
	if !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("a record written by the lost transaction 0x200000003: %v, want registry.ErrStoreWentBack", err)
	}
	t.Log(err)
	// A request entry the lost transaction created is from the lost
	// history too, though no history check covers entries.
	entry := s.requestPath(lockstate.RequestKey{Owner: "worker-04", RequestID: "req-2458"})
	if err := call(map[string]node{entry: at(0, 0x200000003, 0x200000003)}); !errors.Is(err, registry.ErrStoreWentBack) {
		t.Fatalf("an entry created by the lost transaction: %v, want registry.ErrStoreWentBack", err)
	}
	// What the ensemble's history wrote reads as before.
	if err := call(map[string]node{s.revPath(): at(53, 0x30000001a, 0x100000001), rec: at(8, 0x30000001a, 0x100000005)}); err != nil {
		t.Fatalf("the record as the ensemble's history wrote it: %v", err)
	}
}
