package objgate

import (
	"bytes"
	"encoding/json"
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

// manifestHeader is the JSON line of formats 2 and 3; only their
// receipts' entries differ.
type manifestHeader struct {
	Version     uint64            `json:"version"`
	Tag         string            `json:"tag"`
	State       stored.State      `json:"state"`
	Receipts    []json.RawMessage `json:"receipts"`
	Data        string            `json:"data"`
	InlineBytes int               `json:"inlineBytes"`
}

// entriesReader turns a header's receipt entries into receipts of
// resource (format 3's parseEntries, format 2's parseEntriesV2).
type entriesReader func(resource string, es []json.RawMessage) ([]heldReceipt, error)

// parseManifest reads a manifest of resource: format 3 exactly as encode
// writes it, or format 1 or 2, migrated.
func (g *Gate) parseManifest(resource string, b []byte) (held, error) {
	if len(b) > 0 && b[0] == '{' {
		return g.parseV1(resource, b)
	}
	if rest, ok := bytes.CutPrefix(b, []byte(manifestMagicV2)); ok {
		return g.parseV2(resource, rest)
	}
	rest, ok := bytes.CutPrefix(b, []byte(manifestMagic))
	if !ok {
		return held{}, fmt.Errorf("%w: not a format 3 manifest", ErrManifest)
	}
	h, err := g.parseBody(resource, rest, func(_ string, es []json.RawMessage) ([]heldReceipt, error) { return parseEntries(es) })
	if err != nil {
		return held{}, err
	}
	if !bytes.Equal(h.encode(), b) {
		return held{}, fmt.Errorf("%w: not in canonical form", ErrManifest)
	}
	return h, nil
}

// parseBody reads what follows a format 2 or 3 magic line: the header
// line, its receipts read by entries, and the inline bytes. It decodes
// in one plain pass (a manifest is read on every cold decision); format
// 3's canonical check, or format 2's strict walk (parseV2), refuses a
// field given twice or re-cased.
func (g *Gate) parseBody(resource string, rest []byte, entries entriesReader) (held, error) {
	line, inline, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return held{}, fmt.Errorf("%w: no end of header", ErrManifest)
	}
	var mh manifestHeader
	if err := stored.Decode(line, &mh); err != nil {
		return held{}, fmt.Errorf("%w: %v", ErrManifest, err)
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
	if h.receipts, err = entries(resource, mh.Receipts); err != nil {
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
	return h, g.checkHeld(resource, h)
}

func (g *Gate) manifestState(resource string, j stored.State) (gate.FenceState, error) {
	st, err := j.GateState()
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if st.Resource != resource {
		return st, fmt.Errorf("%w: it holds the state of %s", ErrManifest, st.Resource)
	}
	return st, nil
}

// checkHeld checks what every manifest must hold: accepts of the
// resource, in rising (fence, segment) order, none above the state's;
// content, if in an object, under the resource's data/.
func (g *Gate) checkHeld(resource string, h held) error {
	var last gate.Receipt
	for i, hr := range h.receipts {
		r := hr.r
		if r.Resource != resource || r.Outcome != gate.Accepted {
			return fmt.Errorf("%w: receipt %s is a %s of %s", ErrManifest, r.ID(), r.Outcome, r.Resource)
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
