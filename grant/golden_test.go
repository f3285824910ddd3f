// Pins the canonical bytes, digests and proofs of a fixed grant (both forms:
// without and with its held statement) and status under fixed keys
// (testdata/vectors.json, grant.txt, grant-held.txt, status.txt), so that
// any change to the encoding shows, and another implementation can check
// itself against the same vectors. Regenerate with: go test ./grant -update
package grant

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/internal/strictjson"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

type vectors struct {
	About   string `json:"about"`
	Ed25519 struct {
		KeyID     string `json:"keyId"`
		SeedHex   string `json:"seedHex"`
		PublicKey string `json:"publicKey"`
	} `json:"ed25519"`
	HMAC struct {
		KeyID     string `json:"keyId"`
		SecretHex string `json:"secretHex"`
	} `json:"hmacSha256"`
	OperationRoot struct {
		Resource    string `json:"resource"`
		OperationID string `json:"operationId"`
		Root        string `json:"root"`
	} `json:"operationRoot"`
	Grant     messageVector `json:"grant"`
	GrantHeld messageVector `json:"grantHeld"`
	Status    messageVector `json:"status"`
	Batch     batchVector   `json:"batch"`
}

// batchVector is one batch proof tree: the three messages above as its
// leaves, in order, under the Ed25519 key.
type batchVector struct {
	About           string   `json:"about"`
	Leaves          []string `json:"leavesHex"`
	Root            string   `json:"rootHex"`
	SigningInputHex string   `json:"signingInputHex"`
	Proofs          []string `json:"proofs"` // grant, grantHeld, status
}

type messageVector struct {
	File         string `json:"file"`
	Digest       string `json:"digest"`
	SigningInput string `json:"signingInputHex"`
	SigProof     string `json:"sigProof"`
	MacProof     string `json:"macProof"`
}

func makeVectors(t *testing.T) (vectors, map[string][]byte) {
	ed, mac := testEdKey(t, "k1", 0), testMacKey(t, "m1", 100)
	g := testGrant()
	s := testStatus(g)
	var v vectors
	v.About = "fencegate lockGrant.v1 / grantStatus.v1 test vectors: canonical bytes in the named files; " +
		"digest = sha256 of those bytes; proofs sign \"fencegate/proof/v1\\x00\" + schema + \"\\x00\" + raw digest; " +
		"operation root = sha256(\"fencegate/operationRoot/v1\\x00\" + u64be(len(resource)) + resource + u64be(len(operationId)) + operationId)"
	v.Ed25519.KeyID, v.Ed25519.SeedHex, v.Ed25519.PublicKey = ed.KeyID, hex.EncodeToString(testSeed(0)), b64.EncodeToString(ed.PublicKey())
	v.HMAC.KeyID, v.HMAC.SecretHex = mac.KeyID, hex.EncodeToString(testSeed(100))
	v.OperationRoot.Resource, v.OperationRoot.OperationID = g.Resource, "settle-2026-07-19"
	v.OperationRoot.Root = OperationRoot(g.Resource, "settle-2026-07-19").String()
	vec := func(file string, m Message) messageVector {
		return messageVector{File: file, Digest: m.Digest().String(),
			SigningInput: hex.EncodeToString(signingInput(m.Schema(), m.Digest())),
			SigProof:     mustSign(t, ed, m), MacProof: mustSign(t, mac, m)}
	}
	gh := testGrantHeld()
	v.Grant, v.GrantHeld, v.Status = vec("grant.txt", g), vec("grant-held.txt", gh), vec("status.txt", s)
	v.Batch = makeBatchVector(t, ed, []Message{g, gh, s})
	return v, map[string][]byte{"grant.txt": g.Encode(), "grant-held.txt": gh.Encode(), "status.txt": s.Encode()}
}

func makeBatchVector(t *testing.T, ed *SigningKey, ms []Message) batchVector {
	bv := batchVector{About: "RFC 9162 tree; leaf = sha256(0x00 + signing input of the message); node = sha256(0x01 + left + right); " +
		"the signature covers \"fencegate/proof/v1\\x00grantBatch.v1\\x00\" + u64be(size) + root; proof = batch:<keyId>:<index>/<size>:<signature>:<path, siblings from the leaf up>"}
	leaves := make([]Digest, len(ms))
	for i, m := range ms {
		leaves[i] = BatchLeaf(m.Schema(), m.Digest())
		bv.Leaves = append(bv.Leaves, hex.EncodeToString(leaves[i][:]))
	}
	levels := batchTree(leaves)
	root := levels[len(levels)-1][0]
	bv.Root, bv.SigningInputHex = hex.EncodeToString(root[:]), hex.EncodeToString(batchSigningInput(len(ms), root))
	bv.Proofs = mustSignBatch(t, ed, ms)
	return bv
}

func TestGoldenVectors(t *testing.T) {
	v, files := makeVectors(t)
	js, _ := json.MarshalIndent(v, "", "  ")
	files["vectors.json"] = append(js, '\n')
	for name, want := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./grant -update to create)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from what this code produces; the encoding changed", path)
		}
	}
}

// TestGoldenVectorsVerify reads the committed vectors as another
// implementation would: parse the files, check digests, verify proofs.
func TestGoldenVectorsVerify(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := strictjson.Decode(raw, &v); err != nil {
		t.Fatal(err)
	}
	ver, _, _ := testVerifier(t)
	gb, _ := os.ReadFile("testdata/" + v.Grant.File)
	hb, _ := os.ReadFile("testdata/" + v.GrantHeld.File)
	sb, _ := os.ReadFile("testdata/" + v.Status.File)
	g, err := ParseGrant(gb)
	if err != nil {
		t.Fatal(err)
	}
	gh, err := ParseGrant(hb)
	if err != nil || !gh.HeldStatement() || g.HeldStatement() {
		t.Fatalf("grant forms: held %v / %v, err %v", gh != nil && gh.HeldStatement(), g.HeldStatement(), err)
	}
	s, err := ParseStatus(sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m  Message
		mv messageVector
	}{{g, v.Grant}, {gh, v.GrantHeld}, {s, v.Status}} {
		if c.m.Digest().String() != c.mv.Digest {
			t.Errorf("%s digest %s, vector %s", c.m.Schema(), c.m.Digest(), c.mv.Digest)
		}
		for _, p := range []string{c.mv.SigProof, c.mv.MacProof} {
			if err := ver.Verify(c.m, p); err != nil {
				t.Errorf("%s proof %s: %v", c.m.Schema(), p, err)
			}
		}
	}
	if s.Grant != g.Digest() {
		t.Error("status vector does not name the grant vector")
	}
	for i, m := range []Message{g, gh, s} {
		if leaf := BatchLeaf(m.Schema(), m.Digest()); i >= len(v.Batch.Leaves) || hex.EncodeToString(leaf[:]) != v.Batch.Leaves[i] {
			t.Fatalf("batch leaf %d differs", i)
		}
		if err := ver.Verify(m, v.Batch.Proofs[i]); err != nil {
			t.Errorf("batch proof %d: %v", i, err)
		}
	}
}
