package httpapi

import "github.com/fenceview/fenceview/internal/wire"

// The JSON API's busiest request bodies without reflection: acquire, renew
// and release, and fence. They are RPC requests of fewer fields, read as
// the stream reads its requests (wire.Request.DecodePlain); a body that is
// not plain, or has another key, goes to encoding/json, so odd input gets
// exactly the answer it always got. FuzzPlainBodies holds the two equal.

// plainBody is a request body with a parser of its plain shape. decodePlain
// reports false, leaving the value zero, when b is not plain.
type plainBody interface {
	decodePlain(b []byte) bool
}

var (
	lockKeys  = []string{"holder", "leaseMs", "waitMs", "lockDelayMs"}
	fenceKeys = []string{"token", "issuer", "scope", "holder", "source", "signature"}
)

func (req *lockRequest) decodePlain(b []byte) bool {
	var w wire.Request
	ok := w.DecodePlain(b, lockKeys)
	*req = lockRequest{}
	if ok {
		req.Holder, req.LeaseMs, req.WaitMs, req.LockDelayMs = w.Holder, w.LeaseMs, w.WaitMs, w.LockDelayMs
	}
	return ok
}

func (req *fenceRequest) decodePlain(b []byte) bool {
	var w wire.Request
	ok := w.DecodePlain(b, fenceKeys)
	*req = fenceRequest{}
	if ok {
		req.Token, req.Issuer, req.Scope, req.Source, req.Signature = w.Token, w.Issuer, w.Scope, w.Source, w.Signature
		if w.Holder != nil {
			req.Holder = *w.Holder
		}
	}
	return ok
}
