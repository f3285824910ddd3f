package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/keptfile"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// enrollAtRegistry writes the registry half of a gate's enrolment into
// the gate-keys file o.registryKeys (serve --gate-keys), creating it if
// needed: the gate o.gate with resources o.resources (replacing its
// patterns when given; required for a new gate) and the key file
// o.keyFile at o.state and epochs. A new active key moves the gate's
// other active key to verify-only: the rotation's overlap. The result
// must load (key files included) and undo no rotation step of the file
// before it, as serve's reload requires; the file holds no secret, only
// the key file's path.
func enrollAtRegistry(o *enrollOptions, out io.Writer) error {
	sk, err := grant.LoadKeyFile(o.keyFile)
	if err != nil {
		return err
	}
	if sk.Alg != grant.AlgHMACSHA256 {
		return usagef("--key %s is %s: a gate key is hmac-sha256 (fencegate keys gen --alg hmac-sha256)", o.keyFile, sk.Alg)
	}
	dir := filepath.Dir(o.registryKeys)
	before, form, err := readGateKeysForm(o.registryKeys)
	if err != nil {
		return err
	}
	key := httpapi.GateKeyForm{KeyID: sk.KeyID, SecretFile: relativeTo(dir, o.keyFile), MinEpoch: o.minEpoch, MaxEpoch: o.maxEpoch, State: grant.KeyState(o.state)}
	demoted, err := putGateKey(&form, o.gate, o.resources, key)
	if err != nil {
		return err
	}
	next, err := httpapi.ParseGateKeys(form.Marshal(), dir)
	if err != nil {
		return err
	}
	if before != nil {
		if err := before.CheckSuccessor(next); err != nil {
			return err
		}
	}
	if err := grant.WriteFileAtomic(o.registryKeys, form.Marshal(), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "registry: gate %s key %s (%s, epochs %d..%s) in %s\n", o.gate, key.KeyID, key.State, key.MinEpoch, epochText(key.MaxEpoch), o.registryKeys)
	for _, id := range demoted {
		fmt.Fprintf(out, "registry: gate %s key %s now verify-only (retire it once no proof under it is in flight)\n", o.gate, id)
	}
	fmt.Fprintf(out, "registry: reload serve (SIGHUP, or wait for --gate-keys-poll-ms) to put it in force\n")
	return nil
}

// readGateKeysForm reads the gate-keys file at path, loaded (nil when it
// does not exist yet) and as its form.
func readGateKeysForm(path string) (*httpapi.GateKeys, httpapi.GateKeysForm, error) {
	empty := httpapi.GateKeysForm{Schema: httpapi.SchemaGateKeys, Gates: []httpapi.GateForm{}}
	b, err := keptfile.Read(context.Background(), path, httpapi.GateKeysFileBytesMax)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, empty, nil
	}
	if err != nil {
		return nil, empty, fmt.Errorf("--registry-keys: %w", err)
	}
	gk, err := httpapi.ParseGateKeys(b, filepath.Dir(path))
	if err != nil {
		return nil, empty, fmt.Errorf("--registry-keys: %w", err)
	}
	return gk, gk.Form(), nil
}

// putGateKey adds or updates key under gate name in f, and returns the
// IDs of the gate's keys it moved from active to verify-only.
func putGateKey(f *httpapi.GateKeysForm, name string, resources []string, key httpapi.GateKeyForm) ([]string, error) {
	i := slices.IndexFunc(f.Gates, func(g httpapi.GateForm) bool { return g.Gate == name })
	if i < 0 {
		if len(resources) == 0 {
			return nil, usagef("gate %s is new at the registry: give --resources PATTERN (e.g. 'ledger/*')", name)
		}
		f.Gates = append(f.Gates, httpapi.GateForm{Gate: name})
		i = len(f.Gates) - 1
	}
	for _, g := range f.Gates {
		if g.Gate != name && slices.ContainsFunc(g.Keys, func(k httpapi.GateKeyForm) bool { return k.KeyID == key.KeyID }) {
			return nil, usagef("key %s is gate %s's: every gate has keys of its own", key.KeyID, g.Gate)
		}
	}
	g := &f.Gates[i]
	if len(resources) > 0 {
		g.Resources = slices.Clone(resources)
	}
	g.Keys = slices.Clone(g.Keys)
	var demoted []string
	for j := range g.Keys {
		if g.Keys[j].KeyID != key.KeyID && key.State == grant.KeyActive && g.Keys[j].State == grant.KeyActive {
			g.Keys[j].State = grant.KeyVerifyOnly
			demoted = append(demoted, g.Keys[j].KeyID)
		}
	}
	if j := slices.IndexFunc(g.Keys, func(k httpapi.GateKeyForm) bool { return k.KeyID == key.KeyID }); j >= 0 {
		g.Keys[j] = key
	} else {
		g.Keys = append([]httpapi.GateKeyForm{key}, g.Keys...)
	}
	return demoted, nil
}

// relativeTo is path relative to dir when it can be, else absolute.
func relativeTo(dir, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(absDir, abs); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return abs
}
