package guardtest

import (
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
)

// Ledger is a bare ledger.Ledger (no mutex, keys of its own unless it is
// told to use a Verifier) seen through guard's types, so that the
// assertions a test makes of a guard cover the ledger every guard runs
// too: the native guard's, and the WebAssembly modules'.
type Ledger struct{ ledger.Ledger }

func decided(r ledger.Result, token int64, err error) (guard.Decision, error) {
	if err != nil {
		return guard.Decision{}, err
	}
	return guard.Decision{Accepted: r.Accepted, Reason: r.Reason, Presented: token, Required: r.Required}, nil
}

func (l *Ledger) Check(id string, token int64) (guard.Decision, error) {
	r, err := l.Ledger.Check(id, token)
	return decided(r, token, err)
}

func (l *Ledger) CheckHandle(h guard.Handle, token int64) (guard.Decision, error) {
	r, err := l.Ledger.CheckHandle(h, token)
	return decided(r, token, err)
}

// CheckSigned takes the text form, as guard.Guard does; the ledger takes
// raw bytes (its callers decode). A malformed text is passed as its own
// bytes: it stands for a malformed raw signature.
func (l *Ledger) CheckSigned(id string, token int64, sig string) (guard.Decision, error) {
	raw := []byte(sig)
	if b, err := guard.DecodeCarrier(sig); err == nil {
		raw = b
	}
	return l.CheckSignedBytes(id, token, raw)
}

func (l *Ledger) CheckSignedBytes(id string, token int64, sig []byte) (guard.Decision, error) {
	r, err := l.Ledger.CheckSigned(id, token, sig)
	return decided(r, token, err)
}
