package registry

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The compact stored form, version 1: a marker byte naming the kind and
// version, then the fields in declaration order, with no names:
//
//	unsigned integers  uvarint (minimal)
//	instants (ms)      zig-zag varint (minimal)
//	strings            uvarint length, then the bytes
//	digests            0x01 and 32 bytes for "sha256:" + 64 lowercase hex
//	                   digits (operation roots, parameter digests), else
//	                   0x00 and a string
//	states             one byte: 1 HELD, 2 EXPIRED, 3 RELEASED, 4 REVOKED
//	flags, presence    one byte, 0 or 1
//	lists              uvarint count, then the elements
//
// A record is marker 0x81, then highestFence, floor, policyGeneration,
// holder presence (and the holder: its grant body, paramsDigest,
// expiresAtMs), freeAtMs, the waiters, the ended leases. A request entry
// is marker 0x82, then its grant body, paramsDigest, state and endedAtMs.
// A grant body is resource, owner, requestId, lease, operationRoot,
// operationClass, fenceToken, policyGeneration, issuerEpoch, ttlMs,
// issuedAtMs, heldUntilMs (0: a grant of the earlier form, without its
// own HELD statement).
//
// Every value has exactly one encoding (minimal varints, the short digest
// form whenever it applies), so a value read back encodes to the bytes it
// was read from, as content compares need. JSON never starts with either
// marker (it starts with '{' or white space), which is how a decoder tells
// the forms apart.
//
// A record with a lock set's holder or tickets (Holder.Members,
// Waiter.Members) is marker 0x83 and the same fields, with the holder's
// members (a list of strings) after its expiresAtMs, and each waiter's
// members and setTtlMs after its seenMs. Only such a record takes that
// form (a 0x83 record naming no set does not decode), so every record
// without one keeps its bytes.
//
// A record of a read/write lock with readers, a reader's ticket or a
// downgrade's ReadersFromMs is marker 0x84: the fields of the 0x83 form,
// each waiter's read flag after its setTtlMs, and after the ended leases
// the readers (a list of holders: grant body, paramsDigest, expiresAtMs)
// and readersFromMs, then permits as in every form. Only such a record
// takes that form (a 0x84 record with none of them does not decode), so
// every other record keeps its bytes.
const (
	markRecordV1     = 0x81
	markEntryV1      = 0x82
	markRecordSetsV1 = 0x83
	markRecordRWV1   = 0x84
)

const digestPrefix = "sha256:"

var compactStates = [...]grant.State{1: grant.StateHeld, 2: grant.StateExpired, 3: grant.StateReleased, 4: grant.StateRevoked}

// encoder appends the compact form to b.
type encoder struct{ b []byte }

func (e *encoder) uint(u uint64) { e.b = binary.AppendUvarint(e.b, u) }
func (e *encoder) int(i int64)   { e.b = binary.AppendVarint(e.b, i) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) flag(set bool) { e.b = append(e.b, b2byte(set)) }
func (e *encoder) byte(c byte)   { e.b = append(e.b, c) }
func (e *encoder) state(s grant.State) {
	for i, st := range compactStates {
		if i > 0 && st == s {
			e.byte(byte(i))
			return
		}
	}
	e.byte(0) // not a state: the decoder refuses it, as JSON's refuses the name
}

func (e *encoder) digest(s string) {
	if isShortDigest(s) {
		e.byte(1)
		n := len(e.b)
		e.b = append(e.b, make([]byte, 32)...)
		_, _ = hex.Decode(e.b[n:], []byte(s[len(digestPrefix):])) // checked: 64 lowercase hex digits
		return
	}
	e.byte(0)
	e.str(s)
}

// isShortDigest reports whether s is "sha256:" and 64 lowercase hex
// digits, the only spelling the short form gives back.
func isShortDigest(s string) bool {
	if len(s) != len(digestPrefix)+64 || s[:len(digestPrefix)] != digestPrefix {
		return false
	}
	for i := len(digestPrefix); i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func b2byte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (e *encoder) grantBody(g *lockstate.GrantBody) {
	e.str(g.Resource)
	e.str(g.Owner)
	e.str(g.RequestID)
	e.str(g.Lease)
	e.digest(g.OperationRoot)
	e.str(g.OperationClass)
	e.uint(g.FenceToken)
	e.uint(g.PolicyGeneration)
	e.uint(g.IssuerEpoch)
	e.uint(g.TTLMs)
	e.int(g.IssuedAtMs)
	e.int(g.HeldUntilMs)
}

// hasSets reports whether rec names a lock set (its holder's or a
// waiter's members): it then takes the form markRecordSetsV1.
func hasSets(rec *lockstate.Record) bool {
	if rec.Holder != nil && len(rec.Holder.Members) > 0 {
		return true
	}
	for i := range rec.Waiters {
		if len(rec.Waiters[i].Members) > 0 {
			return true
		}
	}
	return false
}

// hasReaders reports whether rec has a read/write lock's state (readers,
// a reader's ticket, ReadersFromMs): it then takes the form
// markRecordRWV1.
func hasReaders(rec *lockstate.Record) bool {
	if len(rec.Readers) > 0 || rec.ReadersFromMs != 0 {
		return true
	}
	for i := range rec.Waiters {
		if rec.Waiters[i].Read {
			return true
		}
	}
	return false
}

func (e *encoder) strs(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func encodeRecordCompact(rec *lockstate.Record) []byte {
	e := encoder{b: make([]byte, 0, 128+96*len(rec.Waiters)+48*len(rec.Ended))}
	rw := hasReaders(rec)
	sets := rw || hasSets(rec)
	switch {
	case rw:
		e.byte(markRecordRWV1)
	case sets:
		e.byte(markRecordSetsV1)
	default:
		e.byte(markRecordV1)
	}
	e.uint(rec.HighestFence)
	e.uint(rec.Floor)
	e.uint(rec.PolicyGeneration)
	e.flag(rec.Holder != nil)
	if h := rec.Holder; h != nil {
		e.grantBody(&h.Grant)
		e.digest(h.ParamsDigest)
		e.int(h.ExpiresAtMs)
		if sets {
			e.strs(h.Members)
		}
	}
	e.int(rec.FreeAtMs)
	e.uint(uint64(len(rec.Waiters)))
	for i := range rec.Waiters {
		w := &rec.Waiters[i]
		e.str(w.Owner)
		e.str(w.RequestID)
		e.int(w.DeadlineMs)
		e.int(w.PollUntilMs)
		e.int(w.JoinedMs)
		e.digest(w.OperationRoot)
		e.str(w.OperationClass)
		e.uint(w.TTLMs)
		e.digest(w.ParamsDigest)
		e.int(w.SeenMs)
		if sets {
			e.strs(w.Members)
			e.uint(w.SetTTLMs)
		}
		if rw {
			e.flag(w.Read)
		}
	}
	e.uint(uint64(len(rec.Ended)))
	for _, x := range rec.Ended {
		e.str(x.Lease)
		e.str(x.Owner)
		e.state(x.State)
		e.int(x.AtMs)
		e.flag(x.Broken)
	}
	if rw {
		e.uint(uint64(len(rec.Readers)))
		for i := range rec.Readers {
			h := &rec.Readers[i]
			e.grantBody(&h.Grant)
			e.digest(h.ParamsDigest)
			e.int(h.ExpiresAtMs)
		}
		e.int(rec.ReadersFromMs)
	}
	if rec.Permits > 0 {
		e.uint(rec.Permits) // only a semaphore's record has the field: every other record keeps its bytes
	}
	return e.b
}

func encodeEntryCompact(en *lockstate.RequestEntry) []byte {
	e := encoder{b: make([]byte, 0, 160)}
	e.byte(markEntryV1)
	e.grantBody(&en.Grant)
	e.digest(en.ParamsDigest)
	e.state(en.State)
	e.int(en.EndedAtMs)
	return e.b
}

// errShort and friends say why compact bytes do not decode.
var (
	errShort        = errors.New("truncated")
	errNonMinimal   = errors.New("non-minimal varint")
	errNonCanonical = errors.New("digest spelled long where the short form applies")
)

// decoder reads the compact form; the first error sticks and every later
// read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	u, n := binary.Uvarint(d.b)
	switch {
	case n <= 0:
		d.fail(errShort)
		return 0
	case n != len(binary.AppendUvarint(nil, u)):
		d.fail(errNonMinimal)
		return 0
	}
	d.b = d.b[n:]
	return u
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	i, n := binary.Varint(d.b)
	switch {
	case n <= 0:
		d.fail(errShort)
		return 0
	case n != len(binary.AppendVarint(nil, i)):
		d.fail(errNonMinimal)
		return 0
	}
	d.b = d.b[n:]
	return i
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string { return string(d.bytes(d.uint())) }

func (d *decoder) byte() byte {
	if b := d.bytes(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (d *decoder) flag() bool {
	switch c := d.byte(); c {
	case 0, 1:
		return c == 1
	default:
		d.fail(fmt.Errorf("flag byte %d", c))
		return false
	}
}

func (d *decoder) state() grant.State {
	c := d.byte()
	if d.err == nil && (c == 0 || int(c) >= len(compactStates)) {
		d.fail(fmt.Errorf("state byte %d", c))
		return ""
	}
	return compactStates[c]
}

func (d *decoder) digest() string {
	switch c := d.byte(); c {
	case 1:
		raw := d.bytes(32)
		if raw == nil {
			return ""
		}
		out := make([]byte, len(digestPrefix)+64)
		copy(out, digestPrefix)
		hex.Encode(out[len(digestPrefix):], raw)
		return string(out)
	case 0:
		s := d.str()
		if isShortDigest(s) {
			d.fail(errNonCanonical)
		}
		return s
	default:
		d.fail(fmt.Errorf("digest form byte %d", c))
		return ""
	}
}

// count reads a list length, refusing one the remaining bytes cannot hold
// (each element takes at least minBytes), so no length allocates beyond
// the input.
func (d *decoder) count(minBytes int) int {
	n := d.uint()
	if n > uint64(len(d.b)/minBytes) {
		d.fail(fmt.Errorf("%d elements in %d bytes", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *decoder) grantBody() lockstate.GrantBody {
	return lockstate.GrantBody{
		Resource: d.str(), Owner: d.str(), RequestID: d.str(), Lease: d.str(),
		OperationRoot: d.digest(), OperationClass: d.str(),
		FenceToken: d.uint(), PolicyGeneration: d.uint(), IssuerEpoch: d.uint(), TTLMs: d.uint(),
		IssuedAtMs: d.int(), HeldUntilMs: d.int(),
	}
}

// end fails on trailing bytes and returns the first error.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.b)))
	}
	return d.err
}

// Minimal sizes of list elements: a waiter is 2 strings, 4 instants, 2
// digests, a string, a number and an instant; an ended lease 2 strings, a
// state, an instant and a flag.
const (
	waiterBytesMin = 13
	endedBytesMin  = 5
	// a reader: a grant body (6 strings, a digest, 4 numbers, 2 instants),
	// a digest and an instant
	readerBytesMin = 15
)

// strs reads a list of strings; an empty one is nil.
func (d *decoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func decodeRecordCompact(b []byte) (*lockstate.Record, error) {
	d := decoder{b: b[1:]}
	rw := b[0] == markRecordRWV1
	sets := rw || b[0] == markRecordSetsV1
	rec := &lockstate.Record{HighestFence: d.uint(), Floor: d.uint(), PolicyGeneration: d.uint()}
	if d.flag() {
		rec.Holder = &lockstate.Holder{Grant: d.grantBody(), ParamsDigest: d.digest(), ExpiresAtMs: d.int()}
		if sets {
			rec.Holder.Members = d.strs()
		}
	}
	rec.FreeAtMs = d.int()
	if n := d.count(waiterBytesMin); n > 0 {
		rec.Waiters = make([]lockstate.Waiter, n)
		for i := range rec.Waiters {
			rec.Waiters[i] = lockstate.Waiter{
				Owner: d.str(), RequestID: d.str(), DeadlineMs: d.int(), PollUntilMs: d.int(), JoinedMs: d.int(),
				OperationRoot: d.digest(), OperationClass: d.str(), TTLMs: d.uint(), ParamsDigest: d.digest(), SeenMs: d.int(),
			}
			if sets {
				rec.Waiters[i].Members, rec.Waiters[i].SetTTLMs = d.strs(), d.uint()
			}
			if rw {
				rec.Waiters[i].Read = d.flag()
			}
		}
	}
	if n := d.count(endedBytesMin); n > 0 {
		rec.Ended = make([]lockstate.EndedLease, n)
		for i := range rec.Ended {
			rec.Ended[i] = lockstate.EndedLease{Lease: d.str(), Owner: d.str(), State: d.state(), AtMs: d.int(), Broken: d.flag()}
		}
	}
	if rw {
		if n := d.count(readerBytesMin); n > 0 {
			rec.Readers = make([]lockstate.Holder, n)
			for i := range rec.Readers {
				rec.Readers[i] = lockstate.Holder{Grant: d.grantBody(), ParamsDigest: d.digest(), ExpiresAtMs: d.int()}
			}
		}
		rec.ReadersFromMs = d.int()
	}
	if d.err == nil && len(d.b) > 0 {
		if rec.Permits = d.uint(); rec.Permits == 0 {
			d.fail(errors.New("permits 0 spelled out")) // one encoding per record: 0 is the field's absence
		}
	}
	if d.err == nil && rw && !hasReaders(rec) {
		d.fail(errors.New("a read/write lock's form with no readers")) // one encoding per record
	}
	if d.err == nil && sets && !rw && !hasSets(rec) {
		d.fail(errors.New("a lock set's form naming no set")) // one encoding per record
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return rec, nil
}

func decodeEntryCompact(b []byte) (*lockstate.RequestEntry, error) {
	d := decoder{b: b[1:]}
	e := &lockstate.RequestEntry{Grant: d.grantBody(), ParamsDigest: d.digest(), State: d.state(), EndedAtMs: d.int()}
	if err := d.end(); err != nil {
		return nil, err
	}
	return e, nil
}
