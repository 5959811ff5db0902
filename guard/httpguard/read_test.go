package httpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// GET and HEAD are reads, any other method a write: the reads table
// through the middleware, over each checker in signed mode.
func TestMiddlewareReadsTable(t *testing.T) {
	middlewares := map[string]func(v *guard.Verifier) func(http.Handler) http.Handler{}
	for name, mk := range signedCheckers(t) {
		middlewares[name] = func(v *guard.Verifier) func(http.Handler) http.Handler {
			return httpguard.Middleware(httpguard.Config{Checker: mk(v)})
		}
	}
	// Built from a key source, over a checker that verifies nothing: the
	// middleware verifies, read or write, before the checker compares.
	middlewares["from keys, over unsigned marks"] = func(v *guard.Verifier) func(http.Handler) http.Handler {
		m, err := httpguard.MiddlewareFrom(context.Background(), staticKeys{v}, httpguard.Config{Checker: guard.New()})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for name, mk := range middlewares {
		t.Run(name, func(t *testing.T) {
			v, _ := guard.NewVerifier(signedtest.Public(signedtest.New))
			fence := mk(v)
			srv := httptest.NewServer(fence(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
			t.Cleanup(srv.Close)
			call := func(method string) signedtest.Checker {
				return func(r string, tok int64, sig string) (guard.Decision, error) {
					req, _ := http.NewRequest(method, srv.URL+"/doc", nil)
					req.Header.Set(httpguard.HeaderToken, strconv.FormatInt(tok, 10))
					req.Header.Set(httpguard.HeaderResource, r)
					if sig != "" {
						req.Header.Set(httpguard.HeaderSignature, sig)
					}
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					raw, _ := io.ReadAll(resp.Body)
					switch resp.StatusCode {
					case http.StatusOK:
						return guard.Decision{Accepted: true, Presented: tok}, nil
					case http.StatusConflict:
						var body map[string]any
						if err := json.Unmarshal(raw, &body); err != nil {
							t.Fatalf("409 body %q", raw)
						}
						req, _ := body["required"].(float64)
						return guard.Decision{Reason: body["reason"].(string), Presented: tok, Required: int64(req)}, nil
					}
					t.Fatalf("%s: status %d body %q", method, resp.StatusCode, raw)
					return guard.Decision{}, nil
				}
			}
			// The verifying wrapper refuses before the checker is asked:
			// it knows no mark to report.
			opts := signedtest.Options{AcceptedWithoutRequired: true, NoRequired: strings.HasPrefix(name, "from keys")}
			signedtest.RunReads(t, call(http.MethodGet), call(http.MethodPut), opts)
			// HEAD is a read too: a shared token passes.
			sigs, _ := guard.SignGrants(signedtest.New, []string{signedtest.ReadResource}, []int64{10}, []bool{true})
			if d, _ := call(http.MethodHead)(signedtest.ReadResource, 10, sigs[0]); !d.Accepted {
				t.Fatalf("HEAD with a shared token: %+v", d)
			}
		})
	}
}

// staticKeys is a key source of the keys v trusts.
type staticKeys struct{ v *guard.Verifier }

func (k staticKeys) RefreshVerifier(_ context.Context, v *guard.Verifier) error {
	return v.SetKeys(k.v.Keys())
}
