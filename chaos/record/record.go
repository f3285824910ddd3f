// Package record is the chaos suite's history format: every process of a
// run (workers, resource services, the orchestrator) appends one JSON
// line per event to its own file, with real timestamps from the one
// machine clock all of them share. The checker reads the files back.
package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Event kinds.
const (
	// Registry answers, recorded by a worker's transport: one per call.
	KindAcquire = "acquire"
	KindQuery   = "query" // QueryRequest: the grant of a request ID
	KindRenew   = "renew"
	KindRelease = "release"
	KindStatus  = "status"
	// KindDowngrade is one send of a read/write lock's downgrade
	// (POST /v1/downgrade): Resource the lock, FromLease the write lease
	// it ends; answered ok, the reader's grant (its resource
	// wire.ReadResource of the lock, its lease, the write lease's fence).
	KindDowngrade = "downgrade"
	// KindWrite is a worker's view of one write (its answer or "unknown").
	KindWrite = "write"
	// KindDecide is one gate decision, recorded by a resource service
	// around its transaction.
	KindDecide = "decide"
	// KindClock is a worker's clock stepped by the orchestrator (Detail:
	// the new offset).
	KindClock = "clock"
	// Orchestrator events.
	KindFault   = "fault"   // a fault injected (Detail names it)
	KindRestore = "restore" // the store restored from a snapshot: the registry went back
	// KindRegression: the store went back by itself (ZooKeeper lost
	// transactions it had acknowledged), seen by the orchestrator's
	// watcher of the store's history: CallNs is its last look at the
	// earlier history, RetNs its first at the later one.
	KindRegression = "regression"
	KindRepair     = "repair" // after a restore: registry floor and policy raised for Resource
	KindResume     = "resume" // gate resumed Resource with Floor
)

// Results other than a registry or gate code.
const (
	ResultOK      = "ok"
	ResultLost    = "lost"    // no definite answer: the call may or may not have taken effect
	ResultUnknown = "unknown" // a write or decision whose outcome is unknown
)

// Event is one line of a history. Fields a kind does not use are zero.
type Event struct {
	Kind   string `json:"kind"`
	Proc   string `json:"proc"`
	CallNs int64  `json:"call"` // real clock, before the call
	RetNs  int64  `json:"ret"`  // real clock, after the answer (or the loss)
	Result string `json:"result"`

	Resource  string `json:"resource,omitempty"`
	Owner     string `json:"owner,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Lease     string `json:"lease,omitempty"`
	// Permits is a semaphore acquire's N (wire.AcquireRequest.Permits),
	// and a query's when its request ID was sent as one; the grant's
	// Resource then names the slot (wire.SlotOf).
	Permits uint64 `json:"permits,omitempty"`
	// Mode is "read" (wire.ModeRead) for an acquire asking for a
	// read/write lock reader's lease, and for a decision on a mutation
	// carrying a reader's grant.
	Mode string `json:"mode,omitempty"`
	// FromLease is the write lease a downgrade ends.
	FromLease string `json:"fromLease,omitempty"`

	// The grant an answer or a mutation carries.
	Fence          uint64 `json:"fence,omitempty"`
	GrantDigest    string `json:"grant,omitempty"`
	GrantIssuedMs  int64  `json:"grantIssued,omitempty"`
	GrantExpiresMs int64  `json:"grantExpires,omitempty"`
	TTLMs          uint64 `json:"ttlMs,omitempty"`
	PolicyGen      uint64 `json:"policyGen,omitempty"`
	// The status statement an answer or a mutation carries.
	State          string `json:"state,omitempty"`
	StatusIssuedMs int64  `json:"statusIssued,omitempty"`
	ValidUntilMs   int64  `json:"validUntil,omitempty"`

	// Writes and decisions.
	OperationID string `json:"op,omitempty"`
	Seq         uint64 `json:"seq,omitempty"`
	Payload     string `json:"payload,omitempty"`
	Highest     uint64 `json:"highest,omitempty"` // the resource's highestFence a rejection names
	Mutant      bool   `json:"mutant,omitempty"`  // decided by the fence-less negative control

	Floor  uint64 `json:"floor,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Revision is the store revision an answer carries: its grant's
	// backend revision, or its status statement's when later (a renewal's
	// commit). On ZooKeeper it is a zxid, which tells the checker whether
	// the transaction survived the ensemble's elections (zkLosses).
	Revision uint64 `json:"revision,omitempty"`
	// SnapshotNs is, for a restore, when its snapshot began: every grant
	// answered before it is in the snapshot (the snapshot syncs its
	// source first), so the restored store knows its fence.
	SnapshotNs int64 `json:"snapshot,omitempty"`
}

// Now is the real clock in nanoseconds, the timestamp of every event.
func Now() int64 { return time.Now().UnixNano() }

// Writer appends events to one file, a line per event, each in a single
// write so that a killed process loses at most the event it was writing.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Create opens path for appending (creating it).
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return &Writer{f: f}, nil
}

// Emit appends e. Errors are dropped: a history that lost an event makes
// the checker less strict, never stricter.
func (w *Writer) Emit(e Event) {
	if w == nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f.Write(append(b, '\n'))
}

// Close closes the file.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// Read returns every complete event in path (a torn last line is
// skipped).
func Read(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
