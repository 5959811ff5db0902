package ledger

import "strings"

// Ledger keeps high-water marks, one per resource, and applies the rule.
// The zero Ledger is empty and ready to use.
//
// An id is validated once, when it first gets a handle; later calls with the
// same id find it in the index and skip validation, since only valid ids are
// ever indexed: answers are the same, only faster where validating costs
// (in WebAssembly it costs more than the rule itself).
type Ledger struct {
	index map[string]Handle
	ids   []string // ids[h-1] is the resource of handle h
	marks []int64  // marks[h-1] is its high-water mark, 0 when none

	signed *signedMode // nil until a key is trusted (Trust, UseVerifier)
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
	// Clone: callers (the WebAssembly exports) may pass strings that alias
	// a buffer they reuse; the ledger must own its keys.
	id := strings.Clone(resourceID)
	l.ids = append(l.ids, id)
	l.marks = append(l.marks, 0)
	h = Handle(len(l.ids))
	l.index[id] = h
	return h, nil
}

// Valid reports whether h is a handle this ledger gave out.
func (l *Ledger) Valid(h Handle) bool { return h >= 1 && int(h) <= len(l.marks) }

// Signed reports whether the ledger is in signed mode (a key is trusted):
// then only CheckSigned can accept a token.
func (l *Ledger) Signed() bool { return l.signed != nil }

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it. Invalid input is an error and changes
// nothing; the id is checked before the token. In signed mode every token
// is refused with ReasonBadSignature (a bare number proves nothing).
func (l *Ledger) Check(resourceID string, token int64) (Result, error) {
	h, err := l.find(resourceID)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateToken(token); err != nil {
		return Result{}, err
	}
	if l.signed != nil {
		return l.badSignature(h), nil
	}
	if h == 0 {
		h, _ = l.Handle(resourceID) // valid: find said so
	}
	return l.apply(h, token), nil
}

// CheckHandle is Check for the resource h names; the token is checked
// before the handle.
func (l *Ledger) CheckHandle(h Handle, token int64) (Result, error) {
	if err := ValidateToken(token); err != nil {
		return Result{}, err
	}
	if !l.Valid(h) {
		return Result{}, unknownHandle(h)
	}
	if l.signed != nil {
		return l.badSignature(h), nil
	}
	return l.apply(h, token), nil
}

// CheckValid is the rule alone for a valid handle and token (1 ..
// 2^63-1) in a ledger not in signed mode: the hot path of a caller that has
// checked all three itself, as the WebAssembly exports do. It returns the
// mark the token was compared with and whether it was accepted.
func (l *Ledger) CheckValid(h Handle, token int64) (required int64, accepted bool) {
	m := &l.marks[h-1]
	required = *m
	if token < required {
		return required, false
	}
	*m = token
	return required, true
}

func (l *Ledger) apply(h Handle, token int64) Result {
	required, ok := l.CheckValid(h, token)
	if !ok {
		return Result{Reason: ReasonStale, Required: required}
	}
	return Result{Accepted: true, Required: required}
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
	if !l.Valid(h) {
		return 0, unknownHandle(h)
	}
	return l.marks[h-1], nil
}

// Seed raises the resource's high-water mark to at least token without
// making a decision (restoring state after a restart); it never lowers a
// mark, and works in signed mode too. It returns the mark after seeding.
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

// ResourceID returns the resource h names.
func (l *Ledger) ResourceID(h Handle) (string, error) {
	if !l.Valid(h) {
		return "", unknownHandle(h)
	}
	return l.ids[h-1], nil
}

// Marks returns a copy of every high-water mark; resources that have a
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
