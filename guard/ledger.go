package guard

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownHandle is returned for a Handle a Guard or Ledger never gave out.
var ErrUnknownHandle = errors.New("unknown resource handle")

// Handle names one resource of a Guard or Ledger by a small integer. Handles
// start at 1; the zero Handle names nothing.
type Handle uint32

// Ledger is the unlocked form of Guard: the same marks, rule, validation,
// decisions and errors, for a caller that already runs one call at a time.
// The WebAssembly guard is such a caller (its host calls one export at a
// time, on one thread), and there a mutex costs as much as the rule itself.
// Everyone else wants Guard. The zero Ledger is empty and ready to use.
//
// An id is validated once, when it first gets a handle; later calls with the
// same id find it in the index and skip validation, since only valid ids are
// ever indexed. Answers are the same, only faster where validating costs
// (WebAssembly).
type Ledger struct {
	index map[string]Handle
	ids   []string // ids[h-1] is the resource of handle h
	marks []int64  // marks[h-1] is its high-water mark, 0 when none

	signed *signedMode // nil unless in signed mode (NewSignedLedger, Trust)
	sigs   []verified  // in signed mode, sigs[h-1] is the last verification for handle h
}

// find returns the handle of a known id, or 0, or the validation error of
// an unknown invalid one.
func (l *Ledger) find(resourceID string) (Handle, error) {
	if h, ok := l.index[resourceID]; ok {
		return h, nil
	}
	return 0, ValidateResourceID(resourceID)
}

// Handle returns the handle of resourceID, giving it one on first use.
// Resolving a handle does not give the resource a high-water mark.
func (l *Ledger) Handle(resourceID string) (Handle, error) {
	h, err := l.find(resourceID)
	if err != nil || h != 0 {
		return h, err
	}
	if l.index == nil {
		l.index = make(map[string]Handle)
	}
	// Clone: callers (the WebAssembly exports) may pass a string that
	// aliases a buffer they reuse; the ledger must own its keys.
	id := strings.Clone(resourceID)
	l.ids = append(l.ids, id)
	l.marks = append(l.marks, 0)
	if l.signed != nil {
		l.sigs = append(l.sigs, verified{})
	}
	h = Handle(len(l.ids))
	l.index[id] = h
	return h, nil
}

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically. Invalid input is an error
// and changes nothing.
func (l *Ledger) Check(resourceID string, token int64) (Decision, error) {
	h, err := l.find(resourceID)
	if err != nil {
		return Decision{}, err
	}
	if err := ValidateToken(token); err != nil {
		return Decision{}, err
	}
	if l.signed != nil { // a bare number proves nothing here
		hwm, _ := l.HighWater(resourceID)
		return badSignature(token, hwm), nil
	}
	if h == 0 {
		h, _ = l.Handle(resourceID) // valid: find said so
	}
	return l.check(h, token), nil
}

// CheckHandle is Check for the resource h names.
func (l *Ledger) CheckHandle(h Handle, token int64) (Decision, error) {
	if err := ValidateToken(token); err != nil {
		return Decision{}, err
	}
	if !l.valid(h) {
		return Decision{}, fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	if l.signed != nil {
		return badSignature(token, l.marks[h-1]), nil
	}
	return l.check(h, token), nil
}

func (l *Ledger) valid(h Handle) bool {
	return h >= 1 && int(h) <= len(l.marks)
}

func (l *Ledger) check(h Handle, token int64) Decision {
	d := Evaluate(l.marks[h-1], token)
	if d.Accepted {
		l.marks[h-1] = token
	}
	return d
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (l *Ledger) HighWater(resourceID string) (int64, error) {
	h, err := l.find(resourceID)
	if err != nil || h == 0 {
		return 0, err
	}
	return l.marks[h-1], nil
}

// HighWaterHandle is HighWater for the resource h names.
func (l *Ledger) HighWaterHandle(h Handle) (int64, error) {
	if !l.valid(h) {
		return 0, fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	return l.marks[h-1], nil
}

// Seed raises the resource's high-water mark to at least token without
// making a decision; it never lowers a mark. It returns the mark after
// seeding.
func (l *Ledger) Seed(resourceID string, token int64) (int64, error) {
	h, err := l.find(resourceID)
	if err != nil {
		return 0, err
	}
	if err := ValidateToken(token); err != nil {
		return 0, err
	}
	if h == 0 {
		h, _ = l.Handle(resourceID)
	}
	if token > l.marks[h-1] {
		l.marks[h-1] = token
	}
	return l.marks[h-1], nil
}

// CheckToken checks a token envelope, as Guard.CheckToken.
func (l *Ledger) CheckToken(issuer, resourceID string, t Token) (Decision, error) {
	h, err := l.find(resourceID)
	if err != nil {
		return Decision{}, err
	}
	if err := ValidateToken(t.Token); err != nil {
		return Decision{}, err
	}
	if reason := t.Mismatch(issuer, resourceID); reason != "" {
		var hwm int64
		if h != 0 {
			hwm = l.marks[h-1]
		}
		return Decision{Accepted: false, Reason: reason, Presented: t.Token, Required: hwm}, nil
	}
	return l.CheckSigned(resourceID, t.Token, t.Signature)
}

// ResourceID returns the resource h names.
func (l *Ledger) ResourceID(h Handle) (string, error) {
	if !l.valid(h) {
		return "", fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	return l.ids[h-1], nil
}

// Marks returns a copy of every high-water mark. Resources that have a
// handle but no mark yet are left out.
func (l *Ledger) Marks() map[string]int64 {
	out := make(map[string]int64)
	for i, m := range l.marks {
		if m > 0 {
			out[l.ids[i]] = m
		}
	}
	return out
}
