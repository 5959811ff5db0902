package httpguard

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/fenceview/fenceview/guard"
)

type tokenKey struct{}

// WithToken returns a context whose requests, sent through Transport, carry
// token for resourceID. Pass the token of the outermost lock grant.
func WithToken(ctx context.Context, resourceID string, token int64) context.Context {
	return context.WithValue(ctx, tokenKey{}, Fence{Resource: resourceID, Token: token})
}

// WithSignedToken is WithToken for a signed token: requests also carry its
// signature in X-Fencing-Signature, for guards in signed mode.
func WithSignedToken(ctx context.Context, resourceID string, token int64, signature string) context.Context {
	return context.WithValue(ctx, tokenKey{}, Fence{Resource: resourceID, Token: token, Signature: signature})
}

// SetSignature puts a token's signature on req, beside SetHeaders.
func SetSignature(req *http.Request, signature string) {
	req.Header.Set(HeaderSignature, signature)
}

// SetHeaders puts the fencing headers on req, for callers not using
// Transport.
func SetHeaders(req *http.Request, resourceID string, token int64) {
	req.Header.Set(HeaderToken, strconv.FormatInt(token, 10))
	req.Header.Set(HeaderResource, resourceID)
}

// Transport is an http.RoundTripper for calling fenced services. It adds
// X-Fencing-Token and X-Resource-Id to requests whose context was made by
// WithToken (headers already on the request are left alone), and turns a
// fencing refusal into an error:
//
//	hc := &http.Client{Transport: &httpguard.Transport{}}
//	resp, err := hc.Do(req.WithContext(httpguard.WithToken(ctx, "inventory:42", token)))
//	var stale *guard.RefusalError
//	if errors.As(err, &stale) { /* fenced out: stop; stale.Required won */ }
//
// Returning an error for a response bends the RoundTripper rule that a
// transport does not interpret responses; it is the point of this one, and
// only a 409 that is a fencing refusal (X-Required-Token, or a JSON body with
// "accepted": false) is turned into an error. Its body is read and closed.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if f, ok := req.Context().Value(tokenKey{}).(Fence); ok && req.Header.Get(HeaderToken) == "" {
		req = req.Clone(req.Context())
		SetHeaders(req, f.Resource, f.Token)
		if f.Signature != "" {
			SetSignature(req, f.Signature)
		}
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := ResponseError(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// maxRefusalBody bounds what is read of a 409 body to recognise a refusal.
const maxRefusalBody = 64 << 10

// ResponseError returns a *guard.RefusalError when resp is a fencing
// refusal (a 409 with X-Required-Token, or a JSON body with "accepted":
// false), reading and closing its body; otherwise nil, leaving resp intact.
func ResponseError(resp *http.Response) error {
	if resp.StatusCode != http.StatusConflict {
		return nil
	}
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	e, ok := ParseRefusal(resp.Header, buf)
	if !ok {
		// Some other conflict: give the body back untouched.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
		return nil
	}
	resp.Body.Close()
	if req := resp.Request; req != nil {
		e.Resource = req.Header.Get(HeaderResource)
		if e.Presented == 0 {
			e.Presented, _ = guard.ParseToken(req.Header.Get(HeaderToken))
		}
	}
	return e
}
