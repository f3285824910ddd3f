package objgate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// ErrManifest: a manifest the gate cannot read (unknown format, a
// malformed or non-canonical one, one that breaks an invariant). The
// resource is left as it is; nothing is decided on it.
var ErrManifest = errors.New("objgate: unreadable manifest")

// manifestHeader is format 2's JSON line.
type manifestHeader struct {
	Version     uint64          `json:"version"`
	Tag         string          `json:"tag"`
	State       stored.State    `json:"state"`
	Receipts    []manifestEntry `json:"receipts"`
	Data        string          `json:"data"`
	InlineBytes int             `json:"inlineBytes"`
}

// manifestV1 is format 1, read only to migrate it.
type manifestV1 struct {
	Version uint64          `json:"version"`
	State   stored.State    `json:"state"`
	Last    *stored.Receipt `json:"lastReceipt,omitempty"`
	Data    string          `json:"data,omitempty"`
}

// parseManifest reads a manifest of resource: format 2 exactly as encode
// writes it, or format 1, migrated.
func (g *Gate) parseManifest(resource string, b []byte) (held, error) {
	if len(b) > 0 && b[0] == '{' {
		return g.parseV1(resource, b)
	}
	rest, ok := bytes.CutPrefix(b, []byte(manifestMagic))
	if !ok {
		return held{}, fmt.Errorf("%w: not a format 2 manifest", ErrManifest)
	}
	line, inline, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return held{}, fmt.Errorf("%w: no end of header", ErrManifest)
	}
	var mh manifestHeader
	if err := stored.Decode(line, &mh); err != nil {
		return held{}, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if len(mh.Tag) != tagDigits || strings.Trim(mh.Tag, "0123456789abcdef") != "" {
		return held{}, fmt.Errorf("%w: tag %q, want %d lowercase hex digits", ErrManifest, mh.Tag, tagDigits)
	}
	h := held{version: mh.Version, tag: mh.Tag, data: mh.Data}
	var err error
	if h.st, err = g.manifestState(resource, mh.State); err != nil {
		return held{}, err
	}
	if len(mh.Receipts) > ManifestReceiptsMax {
		return held{}, fmt.Errorf("%w: %d receipts, at most %d", ErrManifest, len(mh.Receipts), ManifestReceiptsMax)
	}
	if h.receipts, err = parseEntries(resource, mh.Receipts); err != nil {
		return held{}, err
	}
	switch {
	case mh.InlineBytes != len(inline):
		return held{}, fmt.Errorf("%w: %d inline bytes, header says %d", ErrManifest, len(inline), mh.InlineBytes)
	case h.data != "" && len(inline) > 0:
		return held{}, fmt.Errorf("%w: both inline bytes and a data object", ErrManifest)
	case len(inline) > InlineBytesMax:
		return held{}, fmt.Errorf("%w: %d inline bytes, at most %d", ErrManifest, len(inline), InlineBytesMax)
	}
	if len(inline) > 0 {
		h.inline = bytes.Clone(inline)
	}
	if err := g.checkHeld(resource, h); err != nil {
		return held{}, err
	}
	if !bytes.Equal(h.encode(), b) {
		return held{}, fmt.Errorf("%w: not in canonical form", ErrManifest)
	}
	return h, nil
}

// parseV1 reads a format 1 manifest: its last receipt becomes the one
// receipt held (every earlier one was written to an object of its own,
// which the receipt lookups read as they read a batch).
func (g *Gate) parseV1(resource string, b []byte) (held, error) {
	var m manifestV1
	if err := stored.Decode(b, &m); err != nil {
		return held{}, fmt.Errorf("%w: format 1: %w", ErrManifest, err)
	}
	if !bytes.Equal(stored.Encode(m), b) { // as format 1 wrote it: no re-cased, repeated or spaced field
		return held{}, fmt.Errorf("%w: format 1: not in canonical form", ErrManifest)
	}
	h := held{version: m.Version, data: m.Data}
	var err error
	if h.st, err = g.manifestState(resource, m.State); err != nil {
		return held{}, err
	}
	if m.Last != nil {
		r, err := m.Last.GateReceipt()
		if err != nil {
			return held{}, fmt.Errorf("%w: format 1: %w", ErrManifest, err)
		}
		h.receipts = appendReceipt(nil, r)
	}
	return h, g.checkHeld(resource, h)
}

func (g *Gate) manifestState(resource string, j stored.State) (gate.State, error) {
	st, err := j.GateState()
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if st.Resource != resource {
		return st, fmt.Errorf("%w: it holds the state of %s", ErrManifest, st.Resource)
	}
	return st, nil
}

// checkHeld checks what every manifest must hold: receipts of the
// resource, in rising (fence, segment) order, none above the state's;
// content, if in an object, under the resource's data/.
func (g *Gate) checkHeld(resource string, h held) error {
	var last gate.Receipt
	for i, hr := range h.receipts {
		r := hr.r
		if r.Resource != resource {
			return fmt.Errorf("%w: receipt %s is of %s", ErrManifest, r.ID(), r.Resource)
		}
		if i > 0 && !above(r.FenceToken, r.SegmentSeq, last.FenceToken, last.SegmentSeq) {
			return fmt.Errorf("%w: receipts out of order at %s", ErrManifest, r.ID())
		}
		last = r
	}
	if len(h.receipts) > 0 && above(last.FenceToken, last.SegmentSeq, h.st.HighestFence, h.st.LastSegmentSeq) {
		return fmt.Errorf("%w: receipt %s is above the state", ErrManifest, last.ID())
	}
	if h.data != "" && !strings.HasPrefix(h.data, g.base(resource)+"data/") {
		return fmt.Errorf("%w: content %q is not under the resource's data/", ErrManifest, h.data)
	}
	return nil
}

// above reports whether (f, s) comes after (f0, s0).
func above(f, s, f0, s0 uint64) bool { return f > f0 || f == f0 && s > s0 }
