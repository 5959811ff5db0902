package httpguard_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/guard/internal/marktest"
	"github.com/fenceview/fenceview/internal/signedtest"
)

// signedCheckers are the guards in signed mode the middleware can stand on.
func signedCheckers(t *testing.T) map[string]func(v *guard.Verifier) guard.Checker {
	return map[string]func(v *guard.Verifier) guard.Checker{
		"memory":       func(v *guard.Verifier) guard.Checker { return guard.NewSigned(v) },
		"sqlite marks": func(v *guard.Verifier) guard.Checker { return marktest.SQLite(t).Signed(v) },
	}
}

// The signed table through the middleware, with X-Fencing-Signature on the
// wire, over each checker.
func TestMiddlewareSignedTable(t *testing.T) {
	for name, mk := range signedCheckers(t) {
		t.Run(name, func(t *testing.T) {
			v := &guard.Verifier{}
			s := newService(t, mk(v))
			signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
				h := map[string][]string{httpguard.HeaderToken: {strconv.FormatInt(tok, 10)}, httpguard.HeaderResource: {r}}
				if sig != "" {
					h[httpguard.HeaderSignature] = []string{sig}
				}
				resp, body := s.post(t, h)
				switch resp.StatusCode {
				case http.StatusOK:
					return guard.Decision{Accepted: true, Presented: tok}, nil
				case http.StatusConflict:
					if body["accepted"] != false {
						t.Fatalf("409 body %v", body)
					}
					req, _ := body["required"].(float64)
					return guard.Decision{Reason: body["reason"].(string), Presented: tok, Required: int64(req)}, nil
				case http.StatusBadRequest:
					return guard.Decision{}, signedtest.ErrInput
				}
				t.Fatalf("status %d body %v", resp.StatusCode, body)
				return guard.Decision{}, nil
			}, signedtest.Options{AcceptedWithoutRequired: true})
			// The handler saw the signature it was accepted with.
			var last httpguard.Fence
			for _, f := range s.applied {
				if f.Resource == "orders" {
					last = f
				}
			}
			if last.Token != 9 || last.Signature != signedtest.Sign(t, signedtest.New, "orders", 9) {
				t.Fatalf("handler saw %+v", last)
			}
		})
	}
}

// The signed table through Transport: the client side puts the signature on
// the request and turns a bad-signature 409 into a *guard.RefusalError.
func TestTransportSignedTable(t *testing.T) {
	v := &guard.Verifier{}
	s := newService(t, guard.NewSigned(v))
	hc := &http.Client{Transport: &httpguard.Transport{}}
	signedtest.Run(t, v, func(r string, tok int64, sig string) (guard.Decision, error) {
		req, _ := http.NewRequest("POST", s.srv.URL+"/apply", strings.NewReader("{}"))
		resp, err := hc.Do(req.WithContext(httpguard.WithSignedToken(context.Background(), r, tok, sig)))
		var refused *guard.RefusalError
		switch {
		case errors.As(err, &refused):
			return guard.Decision{Reason: refused.Reason, Presented: refused.Presented, Required: refused.Required}, nil
		case err != nil:
			return guard.Decision{}, err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadRequest {
			return guard.Decision{}, signedtest.ErrInput
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return guard.Decision{Accepted: true, Presented: tok}, nil
	}, signedtest.Options{AcceptedWithoutRequired: true})
}

// Two signatures on one request are bad input, not a choice.
func TestMiddlewareTwoSignatures(t *testing.T) {
	v, _ := guard.NewVerifier(signedtest.Public(signedtest.Old))
	s := newService(t, guard.NewSigned(v))
	sig := signedtest.Sign(t, signedtest.Old, "r", 1)
	resp, _ := s.post(t, map[string][]string{httpguard.HeaderToken: {"1"}, httpguard.HeaderResource: {"r"}, httpguard.HeaderSignature: {sig, sig}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
