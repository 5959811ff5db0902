package httpapi

import "github.com/fenceview/fenceview/internal/wire"

// The JSON API's busiest request bodies without reflection: acquire, renew
// and release, and fence. A body in the plain shape (wire.ReadObject) is
// read here and anything else goes to encoding/json, so odd input gets
// exactly the answer it always got; FuzzPlainBodies holds the two equal.

// plainBody is a request body with a parser of its plain shape. decodePlain
// reports false, leaving the value zero, when b is not plain.
type plainBody interface {
	decodePlain(b []byte) bool
}

func (req *lockRequest) decodePlain(b []byte) bool {
	*req = lockRequest{}
	ok := wire.ReadObject(b, func(key []byte, r *wire.Reader) bool {
		switch string(key) {
		case "holder":
			return r.StringPtr(&req.Holder)
		case "leaseMs":
			return r.Int(&req.LeaseMs)
		case "waitMs":
			return r.Int(&req.WaitMs)
		case "lockDelayMs":
			return r.Int(&req.LockDelayMs)
		}
		return false // unknown or differently cased: encoding/json decides
	})
	if !ok {
		*req = lockRequest{}
	}
	return ok
}

func (req *fenceRequest) decodePlain(b []byte) bool {
	*req = fenceRequest{}
	ok := wire.ReadObject(b, func(key []byte, r *wire.Reader) bool {
		switch string(key) {
		case "token":
			return r.Int(&req.Token)
		case "issuer":
			return r.String(&req.Issuer)
		case "scope":
			return r.String(&req.Scope)
		case "holder":
			return r.String(&req.Holder)
		case "source":
			return r.String(&req.Source)
		case "signature":
			return r.String(&req.Signature)
		}
		return false
	})
	if !ok {
		*req = fenceRequest{}
	}
	return ok
}
