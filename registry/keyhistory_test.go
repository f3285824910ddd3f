// Proves the gate key history's rule, "a key ID is used once, forever":
// every way a key comes back (dropped, retired or verify-only moving
// back, another secret, another gate) is refused with its stable code,
// and the two-step resurrection of issue 43 (drop gk-1, then bring it
// back active with another secret) is refused although each step alone
// passes a check against the file before it (the negative control: that
// check, the one serve had, lets the two steps through). Over random
// sequences of gate-keys files, no key admitted by the history ever
// changes its secret or gate, moves back, or reappears after a file left
// it out, while the file-before check breaks that on the same sequences.
// The stored form is strict and one value has one encoding.
package registry_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

func digestOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func use(id, secret string, st grant.KeyState) registry.GateKeyUse {
	return registry.GateKeyUse{KeyID: id, Gate: "ledger-db", Digest: digestOf(secret), State: st}
}

// admitAll admits files in order from an empty history and returns the
// history and the first error.
func admitAll(files ...[]registry.GateKeyUse) (*registry.KeyHistory, error) {
	var h *registry.KeyHistory
	for i, f := range files {
		next, _, err := h.Admit(f)
		if err != nil {
			return h, fmt.Errorf("file %d: %w", i, err)
		}
		h = next
	}
	return h, nil
}

func codesOf(err error) []string {
	var he *registry.KeyHistoryError
	if !errors.As(err, &he) {
		return nil
	}
	var out []string
	for _, r := range he.Refusals {
		out = append(out, r.Code)
	}
	return out
}

func TestKeyHistoryRefusesEveryWayBack(t *testing.T) {
	a, v, r := grant.KeyActive, grant.KeyVerifyOnly, grant.KeyRetired
	f1 := []registry.GateKeyUse{use("gk-1", "one", r), use("gk-2", "two", a)}
	cases := []struct {
		name string
		next []registry.GateKeyUse
		code string // "" admitted
	}{
		{"same file", f1, ""},
		{"gk-2 moves on", []registry.GateKeyUse{use("gk-1", "one", r), use("gk-2", "two", v)}, ""},
		{"a new key", append([]registry.GateKeyUse{use("gk-3", "three", a)}, f1...), ""},
		{"gk-1 dropped", []registry.GateKeyUse{use("gk-2", "two", a)}, ""},
		{"gk-1 retired → active", []registry.GateKeyUse{use("gk-1", "one", a), use("gk-2", "two", v)}, registry.KeyCodeStateBack},
		{"gk-1 retired → verify-only", []registry.GateKeyUse{use("gk-1", "one", v), use("gk-2", "two", a)}, registry.KeyCodeStateBack},
		{"gk-2 active with another secret", []registry.GateKeyUse{use("gk-1", "one", r), use("gk-2", "two'", a)}, registry.KeyCodeOtherSecret},
		{"gk-2 under another gate", []registry.GateKeyUse{use("gk-1", "one", r), {KeyID: "gk-2", Gate: "other-db", Digest: digestOf("two"), State: a}}, registry.KeyCodeOtherGate},
	}
	for _, c := range cases {
		h, err := admitAll(f1, c.next)
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.code != "" && (!errors.Is(err, registry.ErrKeyReused) || len(codesOf(err)) != 1 || codesOf(err)[0] != c.code):
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		case c.code == "" && c.name == "gk-1 dropped":
			if k, _ := h.Lookup("gk-1"); k.State != registry.KeyDropped || k.Digest != digestOf("one") {
				t.Errorf("gk-1 after the drop: %+v", k)
			}
		}
	}
	// Once dropped, an ID never comes back: not even as it was.
	for _, back := range [][]registry.GateKeyUse{
		{use("gk-1", "one", r), use("gk-2", "two", a)},
		{use("gk-1", "one", a), use("gk-2", "two", v)},
	} {
		if _, err := admitAll(f1, []registry.GateKeyUse{use("gk-2", "two", a)}, back); !errors.Is(err, registry.ErrKeyReused) {
			t.Errorf("dropped gk-1 back as %s: %v", back[0].State, err)
		}
	}
}

// localCheck is the rule serve had before the history: the next file
// against the one in force only (GateKeys.CheckSuccessor): a key kept
// keeps its secret and moves only forward; a key new to it is free.
func localCheck(prev, next []registry.GateKeyUse) error {
	rank := map[grant.KeyState]int{grant.KeyActive: 0, grant.KeyVerifyOnly: 1, grant.KeyRetired: 2}
	for _, n := range next {
		for _, p := range prev {
			if p.KeyID == n.KeyID && (p.Digest != n.Digest || rank[n.State] < rank[p.State]) {
				return errors.New("moves back")
			}
		}
	}
	return nil
}

func TestTwoStepResurrectionOfIssue43(t *testing.T) {
	f1 := []registry.GateKeyUse{use("gk-1", "one", grant.KeyRetired), use("gk-2", "two", grant.KeyActive)}
	f2 := []registry.GateKeyUse{use("gk-2", "two", grant.KeyActive)}
	f3 := []registry.GateKeyUse{use("gk-1", "another", grant.KeyActive), use("gk-2", "two", grant.KeyVerifyOnly)}
	// Negative control: each step passes the check against the file in
	// force, so serve loaded both.
	if localCheck(f1, f2) != nil || localCheck(f2, f3) != nil {
		t.Fatal("negative control: the file-before check refuses a step")
	}
	if localCheck(f1, f3) == nil {
		t.Fatal("negative control: the one-step version passes the file-before check")
	}
	_, err := admitAll(f1, f2, f3)
	if codes := codesOf(err); len(codes) != 1 || codes[0] != registry.KeyCodeOtherSecret {
		t.Fatalf("two-step resurrection: %v", err)
	}
	// With its own secret it is refused as dropped.
	f3same := []registry.GateKeyUse{use("gk-1", "one", grant.KeyActive), use("gk-2", "two", grant.KeyVerifyOnly)}
	if _, err := admitAll(f1, f2, f3same); len(codesOf(err)) != 1 || codesOf(err)[0] != registry.KeyCodeDropped {
		t.Fatalf("two-step resurrection, same secret: %v", err)
	}
}

// randomFile draws a gate-keys file over a small pool of IDs and
// secrets, so IDs come back often, with other secrets and states.
func randomFile(rng *rand.Rand) []registry.GateKeyUse {
	states := []grant.KeyState{grant.KeyActive, grant.KeyVerifyOnly, grant.KeyRetired}
	var f []registry.GateKeyUse
	for i := range 5 {
		if rng.IntN(2) == 0 {
			f = append(f, use(fmt.Sprintf("gk-%d", i), fmt.Sprintf("s%d", rng.IntN(2)), states[rng.IntN(3)]))
		}
	}
	return f
}

// usedOnce reports the first file of admitted (in order) that brings a
// key back: another secret, a state before an earlier one, or an ID some
// earlier file left out after naming it.
func usedOnce(admitted [][]registry.GateKeyUse) error {
	rank := map[grant.KeyState]int{grant.KeyActive: 0, grant.KeyVerifyOnly: 1, grant.KeyRetired: 2}
	seen, gone := map[string]registry.GateKeyUse{}, map[string]bool{}
	for i, f := range admitted {
		named := map[string]bool{}
		for _, k := range f {
			named[k.KeyID] = true
			p, ok := seen[k.KeyID]
			if gone[k.KeyID] || ok && (p.Digest != k.Digest || p.Gate != k.Gate || rank[k.State] < rank[p.State]) {
				return fmt.Errorf("file %d brings back %s (%s %s)", i, k.KeyID, k.State, k.Digest[:15])
			}
			seen[k.KeyID] = k
		}
		for id := range seen {
			if !named[id] {
				gone[id] = true
			}
		}
	}
	return nil
}

func TestKeyHistoryKeepsEveryIDOnceOverRandomFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 3))
	brokeLocal, admitted := 0, 0
	for run := range 300 {
		var h *registry.KeyHistory
		var byHistory, byLocal [][]registry.GateKeyUse
		for range 12 {
			f := randomFile(rng)
			if next, _, err := h.Admit(f); err == nil {
				h, byHistory = next, append(byHistory, f)
			} else if !errors.Is(err, registry.ErrKeyReused) {
				t.Fatal(err)
			}
			if len(byLocal) == 0 || localCheck(byLocal[len(byLocal)-1], f) == nil {
				byLocal = append(byLocal, f)
			}
		}
		admitted += len(byHistory)
		if err := usedOnce(byHistory); err != nil {
			t.Fatalf("run %d: the history admitted it: %v", run, err)
		}
		if usedOnce(byLocal) != nil {
			brokeLocal++
		}
		if b := registry.EncodeKeyHistory(h); len(b) > 0 {
			d, err := registry.DecodeKeyHistory(b)
			if err != nil || !bytes.Equal(registry.EncodeKeyHistory(d), b) {
				t.Fatalf("run %d: stored form does not round-trip: %v", run, err)
			}
		}
	}
	if brokeLocal == 0 {
		t.Fatal("negative control: the file-before check never let a key come back")
	}
	if admitted < 2*300 {
		t.Fatalf("the history admitted %d files in 300 runs of 12: it refuses what it need not", admitted)
	}
	t.Logf("the history admitted %d files; the file-before check let a key come back in %d of 300 runs", admitted, brokeLocal)
}

func TestKeyHistoryAdmitRefusesMalformedInput(t *testing.T) {
	for name, f := range map[string][]registry.GateKeyUse{
		"twice":       {use("gk-1", "a", grant.KeyActive), use("gk-1", "a", grant.KeyRetired)},
		"bad ID":      {use("gk 1", "a", grant.KeyActive)},
		"bad digest":  {{KeyID: "gk-1", Gate: "g", Digest: "sha256:00", State: grant.KeyActive}},
		"bad state":   {{KeyID: "gk-1", Gate: "g", Digest: digestOf("a"), State: "paused"}},
		"dropped":     {{KeyID: "gk-1", Gate: "g", Digest: digestOf("a"), State: registry.KeyDropped}},
		"no gate":     {{KeyID: "gk-1", Digest: digestOf("a"), State: grant.KeyActive}},
		"upper digit": {{KeyID: "gk-1", Gate: "g", Digest: "sha256:" + string(bytes.Repeat([]byte("A"), 64)), State: grant.KeyActive}},
	} {
		if _, _, err := (*registry.KeyHistory)(nil).Admit(f); err == nil || errors.Is(err, registry.ErrKeyReused) {
			t.Errorf("%s: %v, want a refusal of the input", name, err)
		}
	}
}

func TestKeyHistoryIsBounded(t *testing.T) {
	// Long IDs and gate names: the largest entries.
	long := func(prefix string, i int) string { return fmt.Sprintf("%s-%060d", prefix, i) }
	file := func(n int) []registry.GateKeyUse {
		f := make([]registry.GateKeyUse, n)
		for i := range f {
			f[i] = registry.GateKeyUse{KeyID: long("key", i), Gate: long("gte", i), Digest: digestOf(fmt.Sprint(i)), State: grant.KeyActive}
		}
		return f
	}
	const fits = 4795 // the least the bound's doc promises
	h, _, err := (*registry.KeyHistory)(nil).Admit(file(fits))
	if err != nil {
		t.Fatalf("%d keys of the longest form: %v", fits, err)
	}
	if n := len(registry.EncodeKeyHistory(h)); n > registry.KeyHistoryBytesMax || len(h.Keys[0].KeyID) != 64 {
		t.Fatalf("%d bytes", n)
	}
	_, _, err = h.Admit(file(fits + 200))
	if codes := codesOf(err); len(codes) != 1 || codes[0] != registry.KeyCodeHistoryFull {
		t.Fatalf("%d keys: %v, want %s", fits+200, err, registry.KeyCodeHistoryFull)
	}
}

func TestKeyHistoryStoredFormIsStrict(t *testing.T) {
	h, err := admitAll([]registry.GateKeyUse{use("gk-1", "one", grant.KeyRetired), use("gk-2", "two", grant.KeyActive)}, []registry.GateKeyUse{use("gk-2", "two", grant.KeyActive)})
	if err != nil {
		t.Fatal(err)
	}
	good := registry.EncodeKeyHistory(h)
	back, err := registry.DecodeKeyHistory(good)
	if err != nil || !bytes.Equal(registry.EncodeKeyHistory(back), good) || fmt.Sprint(back) != fmt.Sprint(h) {
		t.Fatalf("round trip: %v", err)
	}
	swapped := registry.EncodeKeyHistory(&registry.KeyHistory{Keys: []registry.GateKeyUse{h.Keys[1], h.Keys[0]}})
	badState := bytes.Clone(good)
	badState[len(badState)-1] = 9
	for name, b := range map[string][]byte{
		"empty":         {},
		"JSON":          []byte(`{"keys":[]}`),
		"a record":      registry.EncodeRecord(&lockstate.Record{}),
		"trailing byte": append(bytes.Clone(good), 0),
		"truncated":     good[:len(good)-1],
		"out of order":  swapped,
		"state byte 9":  badState,
		"huge count":    {0x83, 0xff, 0xff, 0x03},
		"too large":     append([]byte{0x83}, make([]byte, registry.KeyHistoryBytesMax)...),
	} {
		if _, err := registry.DecodeKeyHistory(b); !errors.Is(err, wire.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeKeyHistory(f *testing.F) {
	h, _ := admitAll([]registry.GateKeyUse{use("gk-1", "one", grant.KeyRetired), use("gk-2", "two", grant.KeyActive)})
	f.Add(registry.EncodeKeyHistory(h))
	f.Add(registry.EncodeKeyHistory(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := registry.DecodeKeyHistory(b)
		if err != nil {
			return
		}
		if !bytes.Equal(registry.EncodeKeyHistory(h), b) {
			t.Fatalf("decoded %x, encodes to %x", b, registry.EncodeKeyHistory(h))
		}
	})
}
