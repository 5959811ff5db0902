package server_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/clock"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/signedtest"
	"github.com/fenceview/fenceview/internal/signing"
)

// harness is a real server on 127.0.0.1:0 and a temp SQLite file, and every
// answer it gave, to search for leaked secrets.
type harness struct {
	t       *testing.T
	srv     *servertest.Server
	log     *servertest.LogBuffer
	answers bytes.Buffer
}

// startSigning starts a server on the wall clock with the admin token,
// logging at debug level.
func startSigning(t *testing.T, cfg server.Config) *harness {
	t.Helper()
	h := &harness{t: t, log: &servertest.LogBuffer{}}
	cfg.AdminToken = admin
	cfg.Clock = clock.Real{}
	cfg.Logger = slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.srv = servertest.Start(t, cfg)
	return h
}

// do sends a request and returns the status and JSON body.
func (h *harness) do(method, path string, headers map[string]string, body any) (int, map[string]any) {
	h.t.Helper()
	var pairs []string
	for k, v := range headers {
		pairs = append(pairs, k, v)
	}
	a := servertest.Do(h.t, nil, servertest.NewRequest(h.t, method, h.srv.URL()+path, body, pairs...))
	h.answers.Write(a.Raw)
	var out map[string]any
	if err := json.Unmarshal(a.Raw, &out); err != nil {
		h.t.Fatalf("%s %s: %d %q", method, path, a.Status, a.Raw)
	}
	return a.Status, out
}

var adminAuth = map[string]string{"Authorization": "Bearer " + admin}

// grant acquires resource and returns the fencing envelope.
func (h *harness) grant(resource, holder string) map[string]any {
	h.t.Helper()
	code, g := h.do("POST", "/v1/locks/"+resource+"/acquire", adminAuth, map[string]any{"holder": holder})
	if code != 200 {
		h.t.Fatalf("acquire: %d %v", code, g)
	}
	return g["fencing"].(map[string]any)
}

// fence presents a token and signature in the HTTP headers.
func (h *harness) fence(resource string, token int64, sig string) (int, map[string]any) {
	h.t.Helper()
	hd := map[string]string{"X-Fencing-Token": strconv.FormatInt(token, 10), "Authorization": "Bearer " + admin}
	if sig != "" {
		hd["X-Fencing-Signature"] = sig
	}
	return h.do("POST", "/v1/fence/"+resource, hd, nil)
}

func (h *harness) keys() []map[string]any {
	h.t.Helper()
	code, body := h.do("GET", "/v1/signing-keys", nil, nil) // public: no credential
	if code != 200 {
		h.t.Fatalf("signing keys: %d %v", code, body)
	}
	var out []map[string]any
	for _, k := range body["keys"].([]any) {
		out = append(out, k.(map[string]any))
	}
	return out
}

func token(f map[string]any) int64 { return int64(f["token"].(float64)) }

// documented verifies a grant's carrier as docs/signed-tokens.md says, with
// crypto/ed25519 and crypto/sha256 alone: a batch carrier's root from the
// leaf message, index, size and path (RFC 9162 §2.1.3.2), signed as
// "fenceview/batch/v2 <size> <hex root>".
func documented(pub ed25519.PublicKey, resource string, tok int64, sig string) bool {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(raw) < 73 || (len(raw)-73)%32 != 0 || raw[0] != 2 {
		return false
	}
	fn, sn := binary.BigEndian.Uint32(raw[65:]), binary.BigEndian.Uint32(raw[69:])
	size := sn
	if fn >= sn {
		return false
	}
	sn--
	r := sha256.Sum256(append([]byte{0}, "fenceview/v1 "+resource+" "+strconv.FormatInt(tok, 10)...))
	for p := raw[73:]; len(p) > 0; p = p[32:] {
		if sn == 0 {
			return false
		}
		if fn&1 == 1 || fn == sn {
			r = sha256.Sum256(append(append([]byte{1}, p[:32]...), r[:]...))
			for fn&1 == 0 && fn != 0 {
				fn, sn = fn>>1, sn>>1
			}
		} else {
			r = sha256.Sum256(append(append([]byte{1}, r[:]...), p[:32]...))
		}
		fn, sn = fn>>1, sn>>1
	}
	return sn == 0 && ed25519.Verify(pub, []byte("fenceview/batch/v2 "+strconv.FormatUint(uint64(size), 10)+" "+hex.EncodeToString(r[:])), raw[1:65])
}

// The life of signing keys through the real server: a key on first start,
// grants signed by it and checked by the server's own fence, a rotation that
// keeps old grants valid, a removal that ends them, a restart that keeps
// the keys, and no private key in any answer or log line.
func TestSigningKeysLifecycle(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "fenceview.db")
	h := startSigning(t, server.Config{DBPath: dbPath, RequireSignatures: true})

	keys := h.keys()
	if len(keys) != 1 || keys[0]["alg"] != "Ed25519" || keys[0]["active"] != true || len(keys[0]["publicKey"].(string)) != 43 {
		t.Fatalf("keys on first start: %v", keys)
	}
	oldID := keys[0]["keyId"].(string)
	pub, err := guard.DecodePublicKey(keys[0]["publicKey"].(string))
	if err != nil || signing.KeyID(pub) != oldID {
		t.Fatalf("published key %v: %v", keys[0], err)
	}

	g1 := h.grant("orders", "a")
	sig1 := g1["signature"].(string)
	raw, _ := guard.DecodeCarrier(sig1)
	if g1["keyId"] != oldID || !documented(pub, "orders", token(g1), sig1) {
		t.Fatalf("grant %v is not signed over the documented message by the published key", g1)
	}

	// Rotation: admin only; new grants by the new key, old ones still pass.
	if code, _ := h.do("POST", "/v1/signing-keys", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("rotation without the admin token: %d", code)
	}
	code, rotated := h.do("POST", "/v1/signing-keys", adminAuth, nil)
	if code != http.StatusCreated || rotated["active"] != true || rotated["keyId"] == oldID {
		t.Fatalf("rotate: %d %v", code, rotated)
	}
	if keys := h.keys(); len(keys) != 2 || keys[0]["keyId"] != rotated["keyId"] || keys[1]["active"] != false {
		t.Fatalf("keys after rotation: %v", keys)
	}
	h.do("POST", "/v1/locks/orders/release", adminAuth, map[string]any{"holder": "a"})
	g2 := h.grant("billing", "b")
	if g2["keyId"] != rotated["keyId"] {
		t.Fatalf("new grant signed by %v, want the new key", g2["keyId"])
	}
	if code, body := h.fence("orders", token(g1), sig1); code != 200 {
		t.Fatalf("an old grant after rotation: %d %v", code, body)
	}
	if code, body := h.fence("billing", token(g2), g2["signature"].(string)); code != 200 {
		t.Fatalf("a new grant: %d %v", code, body)
	}
	// The JSON carrier, and both carriers disagreeing.
	if code, body := h.do("POST", "/v1/fence/billing", adminAuth, map[string]any{"token": token(g2), "signature": g2["signature"]}); code != 200 {
		t.Fatalf("signature in the body: %d %v", code, body)
	}
	if code, _ := h.do("POST", "/v1/fence/billing", map[string]string{"Authorization": "Bearer " + admin, "X-Fencing-Signature": sig1},
		map[string]any{"token": token(g2), "signature": g2["signature"]}); code != http.StatusBadRequest {
		t.Fatalf("header and body signatures differ: %d", code)
	}

	// Refusals of the server's own fence.
	for name, c := range map[string]struct {
		res string
		tok int64
		sig string
	}{
		"unsigned":               {"orders", token(g1), ""},
		"forged":                 {"orders", token(g1), strings.Repeat("A", 86)},
		"truncated":              {"orders", token(g1), sig1[:len(sig1)-1]},
		"over-long":              {"orders", token(g1), sig1 + "AA"},
		"another resource's":     {"billing", token(g1), sig1},
		"another token's":        {"orders", token(g1) + 1, sig1},
		"another server's key":   {"orders", token(g1), otherServerSig(t, "orders", token(g1))},
		"standard base64 padded": {"orders", token(g1), base64.StdEncoding.EncodeToString(raw[:])},
	} {
		code, body := h.fence(c.res, c.tok, c.sig)
		if code != http.StatusConflict || body["reason"] != guard.ReasonBadSignature {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
	if code, _ := h.fence("orders", token(g1), strings.Repeat("A", guard.MaxCarrierTextSize+1)); code != http.StatusBadRequest {
		t.Errorf("a signature over the longest carrier: %d", code)
	}

	// Removal: the active key cannot go; the old one can, and its grants end.
	if code, _ := h.do("DELETE", "/v1/signing-keys/"+rotated["keyId"].(string), adminAuth, nil); code != http.StatusConflict {
		t.Fatalf("removing the active key: %d", code)
	}
	if code, _ := h.do("DELETE", "/v1/signing-keys/"+oldID, nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("removal without the admin token: %d", code)
	}
	if code, _ := h.do("DELETE", "/v1/signing-keys/"+oldID, adminAuth, nil); code != 200 {
		t.Fatalf("removing the old key: %d", code)
	}
	if code, body := h.fence("orders", token(g1), sig1); code != http.StatusConflict || body["reason"] != guard.ReasonBadSignature {
		t.Fatalf("a removed key's grant: %d %v", code, body)
	}
	if code, _ := h.do("DELETE", "/v1/signing-keys/"+oldID, adminAuth, nil); code != http.StatusNotFound {
		t.Fatalf("removing it again: %d", code)
	}

	// The rejections are in the history with their reason.
	_, rej := h.do("GET", "/v1/rejections?reason=bad-signature&limit=100", adminAuth, nil)
	if n := len(rej["rejections"].([]any)); n < 9 {
		t.Fatalf("%d bad-signature rejections recorded", n)
	}

	// No private key anywhere the server speaks.
	privs := storedPrivateKeys(t, dbPath)
	if len(privs) != 1 {
		t.Fatalf("%d keys stored, want 1 after the removal", len(privs))
	}
	h.assertNoSecret(privs)

	// A restart keeps the keys: the new key still signs and verifies.
	h.srv.Close()
	h2 := startSigning(t, server.Config{DBPath: dbPath, RequireSignatures: true})
	if keys := h2.keys(); len(keys) != 1 || keys[0]["keyId"] != rotated["keyId"] {
		t.Fatalf("keys after restart: %v", keys)
	}
	if code, body := h2.fence("billing", token(g2), g2["signature"].(string)); code != 200 {
		t.Fatalf("a grant from before the restart: %d %v", code, body)
	}
	h2.assertNoSecret(privs)
}

// storedPrivateKeys reads the private keys the way an attacker with the
// file would, so the test knows what must never be shown.
func storedPrivateKeys(t *testing.T, path string) [][]byte {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT private_key FROM signing_keys`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		rows.Scan(&b)
		out = append(out, b)
	}
	return out
}

func (h *harness) assertNoSecret(privs [][]byte) {
	h.t.Helper()
	// The dashboard pages too.
	for _, p := range []string{"/", "/resources/orders"} {
		req, _ := http.NewRequest("GET", h.srv.URL()+p, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			h.answers.Write(b)
		}
	}
	everything := h.answers.String() + h.log.String()
	for _, priv := range privs {
		seed := priv[:32]
		for _, form := range []string{
			base64.RawURLEncoding.EncodeToString(seed)[:20], base64.StdEncoding.EncodeToString(seed)[:20],
			base64.RawURLEncoding.EncodeToString(priv)[:20], hex.EncodeToString(seed)[:20],
		} {
			if strings.Contains(everything, form) {
				h.t.Fatalf("a private key (%q...) appears in an answer or the log", form)
			}
		}
	}
}

func otherServerSig(t *testing.T, resource string, tok int64) string {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := guard.Sign(priv, resource, tok)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// --signing-key: the server signs with the file's key and refuses to
// rotate it.
func TestSigningKeyFromFile(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pemBytes, _ := signing.MarshalPrivateKeyPEM(priv)
	keyPath := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyPath, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	h := startSigning(t, server.Config{DBPath: filepath.Join(t.TempDir(), "f.db"), SigningKeyFile: keyPath})
	keys := h.keys()
	if len(keys) != 1 || keys[0]["keyId"] != signing.KeyID(priv.Public().(ed25519.PublicKey)) {
		t.Fatalf("keys: %v", keys)
	}
	f := h.grant("r", "a")
	if !documented(priv.Public().(ed25519.PublicKey), "r", token(f), f["signature"].(string)) {
		t.Fatal("grant not signed by the file's key")
	}
	if code, _ := h.do("POST", "/v1/signing-keys", adminAuth, nil); code != http.StatusConflict {
		t.Fatalf("rotating a file key: %d", code)
	}
	h.assertNoSecret([][]byte{priv})

	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if _, err := servertest.TryStart(t, server.Config{SigningKeyFile: bad}); err == nil {
		t.Fatal("started with a bad key file")
	}
}

// docBlock returns the fenced code block of lang in docs/signed-tokens.md:
// the test runs the documentation's own programs.
func docBlock(t *testing.T, lang string) string {
	b, err := os.ReadFile("../../docs/signed-tokens.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```"+lang+"\n")
	code, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no %s block in docs/signed-tokens.md", lang)
	}
	return code
}

// A real grant's signature verifies with Node's crypto.verify and Python's
// cryptography, using the programs docs/signed-tokens.md shows; a forgery
// does not. Node and Debian's Python with cryptography are required under
// CI (.ci/run installs them).
func TestSignedGrantVerifiesInNodeAndPython(t *testing.T) {
	h := startSigning(t, server.Config{DBPath: filepath.Join(t.TempDir(), "f.db")})
	resource := "заказ 42 α" // UTF-8 and spaces: the message is bytes, as documented
	code, g := h.do("POST", "/v1/locks/"+url.PathEscape(resource)+"/acquire", adminAuth, map[string]any{"holder": "a"})
	if code != 200 {
		t.Fatalf("acquire: %d %v", code, g)
	}
	f := g["fencing"].(map[string]any)
	pub := h.keys()[0]["publicKey"].(string)
	tok := strconv.FormatInt(token(f), 10)
	sig := f["signature"].(string)
	flipped := []byte(sig)
	flipped[10] ^= 1 // still base64url, another signature
	// A batch of five by a test key, its third grant and tampered forms of
	// it, and the older carrier: the programs take both.
	testKey := guard.EncodePublicKey(signedtest.Public(signedtest.New))
	ids := []string{"orders", "orders", "заказ 42 α", "billing", "orders x"}
	batch := signedtest.SignBatch(t, signedtest.New, ids, []int64{10, 11, 12, 13, 14})
	third := batch[2]
	tamper := func(change func([]byte)) string {
		return signedtest.Tamper(third, func(b []byte) []byte { change(b); return b })
	}
	mixed, err := guard.SignGrants(signedtest.New, []string{"orders", "orders"}, []int64{20, 21}, []bool{true, false})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		valid bool
	}{
		{"the grant", []string{pub, resource, tok, sig}, true},
		{"another token", []string{pub, resource, tok + "1", sig}, false},
		{"another resource", []string{pub, "заказ 43 α", tok, sig}, false},
		{"a flipped bit", []string{pub, resource, tok, string(flipped)}, false},
		{"padded", []string{pub, resource, tok, sig + "=="}, false},
		{"non-canonical", []string{pub, resource, tok, sig[:len(sig)-1] + string(sig[len(sig)-1]+1)}, false},
		{"a grant of a batch of five", []string{testKey, "заказ 42 α", "12", third}, true},
		{"each grant of the batch", []string{testKey, "orders x", "14", batch[4]}, true},
		{"a flipped path byte", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[80] ^= 1 })}, false},
		{"another index", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[68] = 3 })}, false},
		{"a path one hash short", []string{testKey, "заказ 42 α", "12", signedtest.Tamper(third, func(b []byte) []byte { return b[:len(b)-32] })}, false},
		{"a sibling's proof", []string{testKey, "заказ 42 α", "12", batch[3]}, false},
		{"a flipped signature byte", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[5] ^= 1 })}, false},
		{"size 0", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[72] = 0 })}, false},
		{"index = size", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[68] = 5 })}, false},
		{"the older carrier", []string{testKey, "заказ 42 α", "12", signedtest.Sign(t, signedtest.New, "заказ 42 α", 12)}, true},
		{"the size rewritten to one its path fits", []string{testKey, "заказ 42 α", "12", tamper(func(b []byte) { b[72] = 6 })}, false},
		{"a version 1 carrier", []string{testKey, "заказ 42 α", "12", signedtest.SignBatchV1(signedtest.New, ids, []int64{10, 11, 12, 13, 14})[2]}, false},
		{"a shared grant, as shared", []string{testKey, "orders", "20", mixed[0], "shared"}, true},
		{"a shared grant, as exclusive", []string{testKey, "orders", "20", mixed[0]}, false},
		{"an exclusive grant, as shared", []string{testKey, "orders", "21", mixed[1], "shared"}, false},
	}
	dir := t.TempDir()
	run := func(t *testing.T, interpreter, file, code string) {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			out, err := exec.Command(interpreter, append([]string{path}, c.args...)...).CombinedOutput()
			if valid := err == nil && strings.TrimSpace(string(out)) == "valid"; valid != c.valid {
				t.Errorf("%s %s: got %q (%v), want valid=%v", interpreter, c.name, out, err, c.valid)
			}
		}
	}
	t.Run("node", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("node is required under CI")
			}
			t.Skip("node not installed")
		}
		run(t, "node", "verify.js", docBlock(t, "js"))
	})
	t.Run("python", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: Python starts slowly; node covers the format")
		}
		// Debian's interpreter, whose python3-cryptography .ci/run installs
		// (a python3 earlier on PATH, pyenv's say, may lack it).
		const python = "/usr/bin/python3"
		if out, err := exec.Command(python, "-c", "import cryptography").CombinedOutput(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s with cryptography is required under CI (python3-cryptography): %v\n%s", python, err, out)
			}
			t.Skipf("%s with cryptography not installed: %v", python, err)
		}
		run(t, python, "verify.py", docBlock(t, "python"))
	})
}
