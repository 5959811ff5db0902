package wasm

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/http-wasm/http-wasm-host-go/handler"
	nethttp "github.com/http-wasm/http-wasm-host-go/handler/nethttp"
	"github.com/tetratelabs/wazero"
	"go.yaml.in/yaml/v3"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// guard-http.wasm under http-wasm-host-go (pinned in go.mod), configured as
// Traefik configures its plugins: start functions "_start" and
// "_initialize", a pool of instances behind one handler. (The runtimes
// share a compilation cache, for the tests' speed.)

// traefikModuleConfig is the module config Traefik's http-wasm plugins get.
func traefikModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().WithStartFunctions("_start", "_initialize")
}

// httpWasmCache compiles guard-http.wasm once for all the tests'
// middlewares (each has a runtime of its own).
var httpWasmCache = wazero.NewCompilationCache()

// newHTTPWasm is guard-http.wasm with config in front of next.
func newHTTPWasm(t testing.TB, config string, next http.Handler) (http.Handler, error) {
	ctx := context.Background()
	mw, err := nethttp.NewMiddleware(ctx, HTTPBytes(), handler.GuestConfig([]byte(config)),
		handler.ModuleConfig(traefikModuleConfig()),
		handler.Runtime(func(ctx context.Context) (wazero.Runtime, error) {
			return wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(httpWasmCache)), nil
		}))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mw.Close(ctx) })
	return mw.NewHandler(ctx, next), nil
}

// backend is what the guard protects: it answers 200 "reached" and echoes
// the fencing headers and the body it got, so tests see the request went
// on unchanged.
func backend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Reached", "yes")
		w.Header().Set("X-Got-Token", r.Header.Get("X-Fencing-Token"))
		w.Header().Set("X-Got-Signature", r.Header.Get("X-Fencing-Signature"))
		w.Write(body)
	})
}

// answer is what one request got back.
type answer struct {
	status  int
	ctype   string
	body    string
	reached bool
}

// req is one request: method, headers (name, value, name, value...) and a
// body.
type req struct {
	method string
	header []string
	body   string
}

func send(t testing.TB, url string, r req) answer {
	hr, err := http.NewRequest(r.method, url+"/orders", strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		hr.Header.Add(r.header[i], r.header[i+1])
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b), resp.Header.Get("X-Reached") == "yes"}
}

func fenced(resource string, token int64, sig string) []string {
	h := []string{"X-Fencing-Token", strconv.FormatInt(token, 10), "X-Resource-Id", resource}
	if sig != "" {
		h = append(h, "X-Fencing-Signature", sig)
	}
	return h
}

// keysBody is a /v1/signing-keys body listing keys (for tests that sign
// with signedtest's fixed keys).
func keysBody(keys ...ed25519.PublicKey) string {
	var b strings.Builder
	b.WriteString(`{"issuer":"test","keys":[`)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"keyId":"k%d","alg":"Ed25519","publicKey":%q,"createdAt":"2026-01-01T00:00:00Z","active":%v}`,
			i, guard.EncodePublicKey(k), i == 0)
	}
	b.WriteString("]}")
	return b.String()
}

// Tokens of a real server, its signing keys as the config, and for every
// refusal the body and status guard/httpguard's middleware (the server's
// codes) answers the same request with.
func TestHTTPWasmAgainstServer(t *testing.T) {
	srv := fenceviewtest.New(t)
	ctx := context.Background()
	resp, err := http.Get(srv.URL + "/v1/signing-keys")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h, err := newHTTPWasm(t, `{"keys":`+string(keys)+`}`, backend())
	if err != nil {
		t.Fatal(err)
	}
	guarded := httptest.NewServer(h)
	defer guarded.Close()

	c := srv.Client(t)
	m := c.Mutex("orders/1", "worker-1")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	one := m.Fencing()
	locks, err := c.LockAll(ctx, "worker-2", "orders/2", "orders/3", "orders/4")
	if err != nil {
		t.Fatal(err)
	}
	batch := locks.Token("orders/3")
	if len(one.Signature) < guard.SignatureTextSize || len(batch.Signature) <= len(one.Signature) {
		t.Fatalf("want a signed grant and a batch carrier with an audit path from the server: %d and %d characters",
			len(one.Signature), len(batch.Signature))
	}

	// The reference: httpguard over the server's keys, on fresh marks.
	v, err := c.Verifier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reference := func(r req) answer {
		ref := httptest.NewServer(httpguard.Middleware(httpguard.Config{Checker: guard.NewSigned(v)})(backend()))
		defer ref.Close()
		return send(t, ref.URL, r)
	}

	flipped := []byte(one.Signature)
	flipped[10] ^= 0x01 // another base64url character
	passes := []req{
		{"POST", fenced("orders/1", one.Token, one.Signature), "the write"},
		{"PUT", fenced("orders/3", batch.Number, batch.Signature), "a batch grant"},
		{"DELETE", fenced("orders/2", locks.Token("orders/2").Number, locks.Token("orders/2").Signature), ""},
		{"GET", nil, ""}, // not a write: unchecked
		{"HEAD", []string{"X-Fencing-Token", "junk"}, ""},
		{"OPTIONS", nil, ""},
	}
	for _, r := range passes {
		a := send(t, guarded.URL, r)
		if !a.reached || a.status != http.StatusOK {
			t.Errorf("%s %v: %d %q, want it passed on", r.method, r.header, a.status, a.body)
		}
		if r.method == "POST" && (a.body != r.body || !strings.Contains(a.ctype, "text/plain")) {
			t.Errorf("the backend got %q", a.body)
		}
	}
	if a := send(t, guarded.URL, passes[0]); a.reached {
		// The headers reach the backend unchanged.
		hr, _ := http.NewRequest("POST", guarded.URL, nil)
		for i := 0; i+1 < len(passes[0].header); i += 2 {
			hr.Header.Set(passes[0].header[i], passes[0].header[i+1])
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Got-Token") != strconv.FormatInt(one.Token, 10) || resp.Header.Get("X-Got-Signature") != one.Signature {
			t.Errorf("the backend got token %q signature %q", resp.Header.Get("X-Got-Token"), resp.Header.Get("X-Got-Signature"))
		}
	}

	other := signedtest.Sign(t, signedtest.Other, "orders/1", one.Token) // a key the config does not list
	refusals := []struct {
		name string
		r    req
		code string
	}{
		{"no token", req{"POST", []string{"X-Resource-Id", "orders/1", "X-Fencing-Signature", one.Signature}, ""}, "invalid-token"},
		{"a token that is not a number", req{"POST", fenced("orders/1", one.Token, one.Signature)[2:], ""}, "invalid-token"},
		{"two tokens", req{"POST", append(fenced("orders/1", one.Token, one.Signature), "X-Fencing-Token", "1"), ""}, "invalid-token"},
		{"token 0", req{"PATCH", fenced("orders/1", 0, one.Signature), ""}, "invalid-token"},
		{"two signatures", req{"POST", append(fenced("orders/1", one.Token, one.Signature), "X-Fencing-Signature", one.Signature), ""}, "invalid-token"},
		{"no resource", req{"POST", []string{"X-Fencing-Token", "5", "X-Fencing-Signature", one.Signature}, ""}, "invalid-request"},
		{"a resource id over 160 bytes", req{"POST", fenced(strings.Repeat("x", 161), one.Token, one.Signature), ""}, "invalid-request"},
		{"unsigned", req{"POST", fenced("orders/1", one.Token, ""), ""}, "bad-signature"},
		{"forged", req{"POST", fenced("orders/1", one.Token, string(flipped)), ""}, "bad-signature"},
		{"another resource's signature", req{"POST", fenced("orders/9", one.Token, one.Signature), ""}, "bad-signature"},
		{"another token's signature", req{"POST", fenced("orders/1", one.Token+1, one.Signature), ""}, "bad-signature"},
		{"a batch grant for another resource", req{"PUT", fenced("orders/4", batch.Number, batch.Signature), ""}, "bad-signature"},
		{"an unknown key", req{"DELETE", fenced("orders/1", one.Token, other), ""}, "bad-signature"},
		{"a signature that is not base64url", req{"POST", fenced("orders/1", one.Token, strings.Repeat("+", 86)), ""}, "bad-signature"},
		{"a signature too long to be a carrier", req{"POST", fenced("orders/1", one.Token, strings.Repeat("A", 10000)), ""}, "bad-signature"},
		{"a token too long to be one", req{"POST", append([]string{"X-Fencing-Token", strings.Repeat("1", 10000)}, fenced("orders/1", one.Token, one.Signature)[2:]...), ""}, "invalid-token"},
	}
	for _, c := range refusals {
		a := send(t, guarded.URL, c.r)
		want := reference(c.r)
		if a.reached || a != want || !strings.Contains(a.body, `"code":"`+c.code+`"`) || a.ctype != "application/json" {
			t.Errorf("%s: got %d %q %q (reached %v); httpguard answers %d %q %q", c.name, a.status, a.ctype, a.body, a.reached, want.status, want.ctype, want.body)
		}
	}

	// Concurrent bursts: the pool grows, every instance decides alike.
	t.Run("bursts", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan string, 64)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 25; i++ {
					if i%2 == 0 {
						if a := send(t, guarded.URL, passes[i%3]); !a.reached {
							errs <- fmt.Sprintf("a good write refused: %d %s", a.status, a.body)
						}
					} else {
						c := refusals[i%len(refusals)]
						if a := send(t, guarded.URL, c.r); a.reached || !strings.Contains(a.body, `"code":"`+c.code+`"`) {
							errs <- fmt.Sprintf("%s: %d %s", c.name, a.status, a.body)
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})
}

// Batch carriers and a read phase's token (signedtest's table): with no
// marks, each is decided on its signature alone, and a shared grant's
// token never passes as a write.
func TestHTTPWasmBatchCarriers(t *testing.T) {
	h, err := newHTTPWasm(t, `{"keys":`+keysBody(signedtest.Public(signedtest.New))+`}`, backend())
	if err != nil {
		t.Fatal(err)
	}
	guarded := httptest.NewServer(h)
	defer guarded.Close()
	signedtest.RunBatch(t, func(r string, tok int64, sig string) (guard.Decision, error) {
		a := send(t, guarded.URL, req{"POST", fenced(r, tok, sig), ""})
		switch {
		case a.reached:
			return guard.Decision{Accepted: true, Presented: tok}, nil
		case a.status != http.StatusConflict:
			return guard.Decision{}, fmt.Errorf("%d %s", a.status, a.body)
		}
		for _, reason := range []string{guard.ReasonBadSignature, guard.ReasonSharedToken} {
			d := guard.Decision{Reason: reason, Presented: tok}
			if want := string(append(httpguard.NewRefusal(d).AppendJSON(nil), '\n')); a.body == want {
				return d, nil
			}
		}
		return guard.Decision{}, fmt.Errorf("not httpguard's refusal body: %s", a.body)
	}, signedtest.Options{NoRequired: true})
}

// writes and resourceHeader configure what is checked; the keys of two
// servers may be trusted at once.
func TestHTTPWasmConfig(t *testing.T) {
	cfg := `{"keys":` + keysBody(signedtest.Public(signedtest.Other), signedtest.Public(signedtest.New)) +
		`,"writes":["PUT","LOCK"],"resourceHeader":"X-Fenced-Object"}`
	h, err := newHTTPWasm(t, cfg, backend())
	if err != nil {
		t.Fatal(err)
	}
	guarded := httptest.NewServer(h)
	defer guarded.Close()
	sig := signedtest.Sign(t, signedtest.New, "obj", 7)
	for _, c := range []struct {
		r       req
		reached bool
	}{
		{req{"POST", nil, ""}, true}, // not a write here
		{req{"PUT", []string{"X-Fencing-Token", "7", "X-Fenced-Object", "obj", "X-Fencing-Signature", sig}, ""}, true},
		{req{"LOCK", []string{"X-Fencing-Token", "7", "X-Fenced-Object", "obj", "X-Fencing-Signature", sig}, ""}, true},
		{req{"PUT", fenced("obj", 7, sig), ""}, false}, // X-Resource-Id is not the header configured
		{req{"PUT", []string{"X-Fencing-Token", "7", "X-Fenced-Object", "obj", "X-Fencing-Signature", signedtest.Sign(t, signedtest.Other, "obj", 7)}, ""}, true},
	} {
		if a := send(t, guarded.URL, c.r); a.reached != c.reached {
			t.Errorf("%s %v: %d %s, want reached %v", c.r.method, c.r.header, a.status, a.body, c.reached)
		}
	}
}

// A config the module cannot use stops it from starting.
func TestHTTPWasmRefusesBadConfig(t *testing.T) {
	good := keysBody(signedtest.Public(signedtest.New))
	var seventeen []ed25519.PublicKey
	for i := range 17 {
		seventeen = append(seventeen, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i)}, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	}
	for _, cfg := range []string{
		``, `not json`, `[]`, `{}`, `{"keys":null}`, `{"keys":[]}`, `{"keys":{"keys":[]}}`,
		`{"keys":` + strings.Replace(good, "Ed25519", "RSA", 1) + `}`,
		`{"keys":` + strings.Replace(good, `"publicKey":"`, `"publicKey":"A`, 1) + `}`,
		`{"keys":` + keysBody(seventeen...) + `}`,
		`{"keys":` + good + `,"writes":[]}`, `{"keys":` + good + `,"writes":["PO ST"]}`, `{"keys":` + good + `,"writes":"POST"}`,
		`{"keys":` + good + `,"resourceHeader":""}`, `{"keys":` + good + `,"resourceHeader":"X Resource"}`,
		`{"keys":` + good + `,"resource_header":"X-Resource"}`, // unknown: a typo must not be ignored
	} {
		if _, err := newHTTPWasm(t, cfg, backend()); err == nil {
			t.Errorf("config %.120q: the module started", cfg)
		}
	}
	if _, err := newHTTPWasm(t, `{"keys":`+good+`,"writes":null}`, backend()); err != nil {
		t.Fatalf("a good config: %v", err)
	}
}

// The Traefik configurations the repository ships start the module with
// the settings Traefik would pass it (as JSON): the manifest's testData
// and docs/wasm-abi.md's dynamic configuration. Traefik itself is not run.
func TestTraefikConfigsStart(t *testing.T) {
	manifest, err := os.ReadFile("../.traefik.yml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Runtime  string         `yaml:"runtime"`
		Type     string         `yaml:"type"`
		TestData map[string]any `yaml:"testData"`
	}
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	if m.Runtime != "wasm" || m.Type != "middleware" {
		t.Fatalf("manifest: runtime %q type %q", m.Runtime, m.Type)
	}
	configs := map[string]map[string]any{".traefik.yml testData": m.TestData}
	blocks, err := docblocks.Read("..", []string{"docs/wasm-abi.md"}, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		var dynamic struct {
			HTTP struct {
				Middlewares map[string]struct {
					Plugin map[string]map[string]any `yaml:"plugin"`
				} `yaml:"middlewares"`
			} `yaml:"http"`
		}
		if err := yaml.Unmarshal([]byte(b.Code), &dynamic); err != nil {
			t.Fatalf("%s:%d: %v", b.File, b.Line, err)
		}
		for name, mw := range dynamic.HTTP.Middlewares {
			configs[fmt.Sprintf("%s:%d %s", b.File, b.Line, name)] = mw.Plugin["fenceview"]
		}
	}
	if len(configs) < 2 {
		t.Fatalf("found %d configurations, want the manifest's and the docs'", len(configs))
	}
	for where, cfg := range configs {
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newHTTPWasm(t, string(js), backend()); err != nil {
			t.Errorf("%s: %s: %v", where, js, err)
		}
	}
}
