package httpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/guard/internal/marktest"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

// service is a downstream service whose /apply handler records what it
// applied, fenced by the middleware over checker.
type service struct {
	mu      sync.Mutex
	applied []httpguard.Fence
	srv     *httptest.Server
}

func newService(t *testing.T, c guard.Checker) *service {
	t.Helper()
	s := &service{}
	mux := http.NewServeMux()
	mux.Handle("POST /apply", httpguard.Middleware(httpguard.Config{Checker: c})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := httpguard.FromContext(r.Context())
		if !ok {
			http.Error(w, "no fence in context", http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		s.applied = append(s.applied, f)
		s.mu.Unlock()
		fmt.Fprintf(w, "applied %d\n", f.Token)
	})))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *service) post(t *testing.T, headers map[string][]string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.srv.URL+"/apply", strings.NewReader("{}"))
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d with content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("status %d body %q: %v", resp.StatusCode, raw, err)
		}
	}
	return resp, body
}

func fenced(res string, tok string) map[string][]string {
	return map[string][]string{httpguard.HeaderResource: {res}, httpguard.HeaderToken: {tok}}
}

func checkers(t *testing.T) map[string]guard.Checker {
	return map[string]guard.Checker{"memory": guard.New(), "sqlite": marktest.SQLite(t)}
}

func TestMiddlewareAcceptsAndRefuses(t *testing.T) {
	for name, c := range checkers(t) {
		t.Run(name, func(t *testing.T) {
			s := newService(t, c)
			if resp, _ := s.post(t, fenced("orders/42 ü", "42")); resp.StatusCode != 200 {
				t.Fatalf("token 42: status %d", resp.StatusCode)
			}
			if resp, _ := s.post(t, fenced("orders/42 ü", "42")); resp.StatusCode != 200 {
				t.Fatalf("token 42 again: status %d", resp.StatusCode)
			}
			resp, body := s.post(t, fenced("orders/42 ü", "41"))
			if resp.StatusCode != http.StatusConflict || resp.Header.Get(httpguard.HeaderRequired) != "42" {
				t.Fatalf("token 41: status %d, required header %q", resp.StatusCode, resp.Header.Get(httpguard.HeaderRequired))
			}
			want := map[string]any{"error": "stale fencing token", "accepted": false, "reason": "stale-token", "presented": 41.0, "required": 42.0}
			for k, v := range want {
				if body[k] != v {
					t.Errorf("409 body[%q] = %v, want %v (body %v)", k, body[k], v, body)
				}
			}
			// Other resources are independent.
			if resp, _ := s.post(t, fenced("orders/43", "1")); resp.StatusCode != 200 {
				t.Fatalf("other resource: status %d", resp.StatusCode)
			}
			want2 := []httpguard.Fence{{Resource: "orders/42 ü", Token: 42}, {Resource: "orders/42 ü", Token: 42}, {Resource: "orders/43", Token: 1}}
			if fmt.Sprint(s.applied) != fmt.Sprint(want2) {
				t.Fatalf("applied = %v, want %v", s.applied, want2)
			}
		})
	}
}

func TestMiddlewareBadInput(t *testing.T) {
	g := guard.New()
	s := newService(t, g)
	tokenErr := "missing or invalid fencing token"
	resErr := "missing or invalid resource id"
	cases := []struct {
		name    string
		headers map[string][]string
		want    string
	}{
		{"no token", map[string][]string{httpguard.HeaderResource: {"r"}}, tokenErr},
		{"empty token", fenced("r", ""), tokenErr},
		{"zero", fenced("r", "0"), tokenErr},
		{"negative", fenced("r", "-5"), tokenErr},
		{"plus", fenced("r", "+5"), tokenErr},
		{"float", fenced("r", "5.0"), tokenErr},
		{"inner space", fenced("r", "5 5"), tokenErr},
		{"hex", fenced("r", "0x5"), tokenErr},
		{"too big", fenced("r", "9223372036854775808"), tokenErr},
		{"two tokens", map[string][]string{httpguard.HeaderResource: {"r"}, httpguard.HeaderToken: {"5", "6"}}, tokenErr},
		{"no resource", map[string][]string{httpguard.HeaderToken: {"5"}}, resErr},
		{"empty resource", fenced("", "5"), resErr},
		{"long resource", fenced(strings.Repeat("r", 161), "5"), resErr},
		{"two resources", map[string][]string{httpguard.HeaderResource: {"a", "b"}, httpguard.HeaderToken: {"5"}}, resErr},
	}
	for _, c := range cases {
		resp, body := s.post(t, c.headers)
		msg, _ := body["error"].(string)
		wantCode := httpguard.CodeInvalidToken
		if c.want == resErr {
			wantCode = httpguard.CodeInvalidRequest
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(msg, c.want+": send one ") || body["code"] != wantCode {
			t.Errorf("%s: status %d body %v, want 400 %s %q naming the header to send", c.name, resp.StatusCode, body, wantCode, c.want)
		}
	}
	if len(s.applied) != 0 || len(g.Marks()) != 0 {
		t.Fatalf("bad input changed something: applied %v marks %v", s.applied, g.Marks())
	}
	// The largest token is fine.
	if resp, _ := s.post(t, fenced("r", "9223372036854775807")); resp.StatusCode != 200 {
		t.Fatalf("max token: status %d", resp.StatusCode)
	}
}

// A refusal with another reason has no X-Required-Token (it is not a token
// to beat) but its body still says what the mark is.
type fixedChecker guard.Decision

func (f fixedChecker) Check(string, int64) (guard.Decision, error) { return guard.Decision(f), nil }

func TestNonStaleRefusal(t *testing.T) {
	s := newService(t, fixedChecker{Reason: guard.ReasonUnissued, Presented: 900, Required: 12})
	resp, body := s.post(t, fenced("r", "900"))
	if resp.StatusCode != 409 || resp.Header.Get(httpguard.HeaderRequired) != "" || body["reason"] != "unissued-token" || body["required"] != 12.0 {
		t.Fatalf("status %d header %q body %v", resp.StatusCode, resp.Header.Get(httpguard.HeaderRequired), body)
	}
}

type failingChecker struct{}

func (failingChecker) Check(string, int64) (guard.Decision, error) {
	return guard.Decision{}, errors.New("database is down")
}

func TestCheckerFailureIs500(t *testing.T) {
	s := newService(t, failingChecker{})
	resp, body := s.post(t, fenced("r", "5"))
	if resp.StatusCode != 500 || body["error"] != "fencing check failed" || body["code"] != httpguard.CodeInternal || len(s.applied) != 0 {
		t.Fatalf("status %d body %v applied %v", resp.StatusCode, body, s.applied)
	}
}

// ctxChecker proves the request's context reaches a ContextChecker. It
// holds its guard in a field: embedding would promote the guard's signed
// methods, which the middleware prefers.
type ctxChecker struct {
	guard    *guard.Guard
	sawValue bool
}

type probeKey struct{}

func (c *ctxChecker) CheckContext(ctx context.Context, res string, tok int64) (guard.Decision, error) {
	c.sawValue = ctx.Value(probeKey{}) == "yes"
	return c.guard.Check(res, tok)
}

func (c *ctxChecker) Check(res string, tok int64) (guard.Decision, error) {
	return c.guard.Check(res, tok)
}

func TestContextCheckerGetsRequestContext(t *testing.T) {
	c := &ctxChecker{guard: guard.New()}
	h := httpguard.Middleware(httpguard.Config{Checker: c})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("POST", "/", nil)
	req = req.WithContext(context.WithValue(req.Context(), probeKey{}, "yes"))
	httpguard.SetHeaders(req, "r", 3)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !c.sawValue {
		t.Fatalf("status %d, checker saw request context: %v", rec.Code, c.sawValue)
	}
}

func TestResourceFromPath(t *testing.T) {
	g := guard.New()
	mux := http.NewServeMux()
	mw := httpguard.Middleware(httpguard.Config{Checker: g, Resource: func(r *http.Request) (string, error) {
		return "inventory:" + r.PathValue("id"), nil
	}})
	mux.Handle("PUT /items/{id}", mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	req := httptest.NewRequest("PUT", "/items/42", nil)
	req.Header.Set(httpguard.HeaderToken, "7")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if hwm, _ := g.HighWater("inventory:42"); rec.Code != 200 || hwm != 7 {
		t.Fatalf("status %d mark %d", rec.Code, hwm)
	}
}

// Many writers with increasing tokens race: handlers for one resource never
// overlap, and the tokens they apply never go down, because the middleware
// holds the resource from the check to the end of the handler.
func TestHandlersSeeNonDecreasingTokens(t *testing.T) {
	g := guard.New()
	var mu sync.Mutex
	active, maxActive := 0, 0
	var seq []int64
	h := httpguard.Middleware(httpguard.Config{Checker: g})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		active++
		maxActive = max(maxActive, active)
		mu.Unlock()
		runtime.Gosched() // give an overlapping handler its chance
		f, _ := httpguard.FromContext(r.Context())
		mu.Lock()
		seq = append(seq, f.Token)
		active--
		mu.Unlock()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	var wg sync.WaitGroup
	for tok := 1; tok <= 64; tok++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL, nil)
			httpguard.SetHeaders(req, "hot", int64(tok))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if maxActive != 1 {
		t.Fatalf("%d handlers ran at once for one resource", maxActive)
	}
	for i := 1; i < len(seq); i++ {
		if seq[i] < seq[i-1] {
			t.Fatalf("applied tokens went down: %v", seq)
		}
	}
	if hwm, _ := g.HighWater("hot"); hwm != 64 || seq[len(seq)-1] != 64 {
		t.Fatalf("mark %d, last applied %v", hwm, seq)
	}
}

// The client side against the real middleware: headers attached from the
// context, refusals become *guard.RefusalError with the required token.
func TestTransportAgainstMiddleware(t *testing.T) {
	s := newService(t, guard.New())
	hc := &http.Client{Transport: &httpguard.Transport{Base: s.srv.Client().Transport}}
	send := func(tok int64) (*http.Response, error) {
		ctx := httpguard.WithToken(context.Background(), "inventory:42", tok)
		req, _ := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/apply", strings.NewReader("{}"))
		return hc.Do(req)
	}
	resp, err := send(42)
	if b := readBody(t, resp, err); b != "applied 42\n" {
		t.Fatalf("body %q", b)
	}
	_, err = send(41)
	var stale *guard.RefusalError
	if !errors.As(err, &stale) {
		t.Fatalf("err = %v, want *guard.RefusalError", err)
	}
	want := guard.RefusalError{Resource: "inventory:42", Reason: guard.ReasonStale, Presented: 41, Required: 42}
	if *stale != want {
		t.Fatalf("error = %+v, want %+v", *stale, want)
	}
	if len(s.applied) != 1 {
		t.Fatalf("applied = %v", s.applied)
	}
}

// A 409 that is not a fencing refusal is the application's business: it
// comes back as a response with its body intact.
func TestTransportPassesOtherConflicts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":"sku already exists"}`)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &httpguard.Transport{}}
	req, _ := http.NewRequestWithContext(httpguard.WithToken(context.Background(), "r", 5), "POST", srv.URL, nil)
	resp, err := hc.Do(req)
	if b := readBody(t, resp, err); resp.StatusCode != 409 || b != `{"error":"sku already exists"}` {
		t.Fatalf("status %d body %q", resp.StatusCode, b)
	}
}

// readBody is the body of resp, an answer to a request that must not have
// failed with err, read to its end and closed.
func readBody(t *testing.T, resp *http.Response, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a short read shows in what the test compares
	return string(b)
}

// Requests without a token in their context go out untouched, and headers
// set by hand win over the context.
func TestTransportHeaders(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(httpguard.HeaderResource)+"="+r.Header.Get(httpguard.HeaderToken))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &httpguard.Transport{}}
	do := func(req *http.Request) {
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	req, _ := http.NewRequest("GET", srv.URL, nil)
	do(req)
	req, _ = http.NewRequestWithContext(httpguard.WithToken(context.Background(), "a b/c", 9), "GET", srv.URL, nil)
	do(req)
	req, _ = http.NewRequestWithContext(httpguard.WithToken(context.Background(), "ctx", 9), "GET", srv.URL, nil)
	httpguard.SetHeaders(req, "manual", 3)
	do(req)
	if want := "=,a b/c=9,manual=3"; strings.Join(got, ",") != want {
		t.Fatalf("headers seen = %v, want %s", got, want)
	}
}

// The guards the package doc names fit the middleware as they are.
var (
	_ guard.Checker        = (*guard.Guard)(nil)
	_ guard.Checker        = (*sqlguard.Marks)(nil)
	_ guard.ContextChecker = (*sqlguard.Marks)(nil)
)

// OnDecision sees every decision, accepted and refused, with the resource
// it was made for.
func TestOnDecisionSeesEveryDecision(t *testing.T) {
	var seen []string
	h := httpguard.Middleware(httpguard.Config{Checker: guard.New(), OnDecision: func(_ *http.Request, res string, d guard.Decision) {
		seen = append(seen, fmt.Sprintf("%s %d %v", res, d.Presented, d.Accepted))
	}})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tok := range []int64{5, 3} {
		req := httptest.NewRequest("POST", "/", nil)
		httpguard.SetHeaders(req, "r", tok)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if want := []string{"r 5 true", "r 3 false"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("decisions seen %q, want %q", seen, want)
	}
}

// With Concurrent set, a second request for a resource runs its handler
// while the first one's is still running (serialised, the first would wait
// for the second forever and the test would never end).
func TestConcurrentLetsHandlersOverlap(t *testing.T) {
	first, second := make(chan struct{}), make(chan struct{})
	h := httpguard.Middleware(httpguard.Config{Checker: guard.New(), Concurrent: true})(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if f, _ := httpguard.FromContext(r.Context()); f.Token == 1 {
			close(first)
			<-second
			return
		}
		close(second)
	}))
	done := make(chan int, 2)
	serve := func(tok int64) {
		req := httptest.NewRequest("POST", "/", nil)
		httpguard.SetHeaders(req, "r", tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		done <- rec.Code
	}
	go serve(1)
	<-first // the first handler runs, and waits for the second
	go serve(2)
	for range 2 {
		if code := <-done; code != 200 {
			t.Fatalf("status %d", code)
		}
	}
}

// A refusal writes itself as encoding/json would, byte for byte.
func FuzzRefusalJSON(f *testing.F) {
	f.Add("stale fencing token", "stale-token", false, "stale-token", int64(1), int64(2))
	f.Add("<&>\u2028\xff", "", true, "\"\\", int64(-1), int64(1<<62))
	f.Fuzz(func(t *testing.T, msg, code string, accepted bool, reason string, presented, required int64) {
		r := httpguard.Refusal{Error: msg, Code: code, Accepted: accepted, Reason: reason, Presented: presented, Required: required}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON([]byte("x")); string(got) != "x"+string(want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}
