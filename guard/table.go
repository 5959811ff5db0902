package guard

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrUnknownHandle is returned for a Handle a Table never gave out.
var ErrUnknownHandle = errors.New("unknown resource handle")

// Handle names one resource of a Table by a small integer, so a hot path can
// check tokens without hashing the resource id on every call. Handles start
// at 1; the zero Handle names nothing.
type Handle uint32

// Table is a guard whose resources can also be named by Handle. It applies
// the same rule (Evaluate) and the same validation as Guard, and gives the
// same decisions and errors for the same calls; it differs only in storage:
// marks live in a slice indexed by handle, and ids are resolved to handles
// once. The WebAssembly guard is built on it.
//
// A handle, once given, names its resource for the life of the Table, so the
// table only grows (like Guard's map). It is safe for concurrent use.
type Table struct {
	mu    sync.Mutex
	index map[string]Handle
	ids   []string // ids[h-1] is the resource of handle h
	marks []int64  // marks[h-1] is its high-water mark, 0 when none
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{index: make(map[string]Handle)}
}

// Handle returns the handle of resourceID, giving it one on first use.
// Resolving a handle does not give the resource a high-water mark.
func (t *Table) Handle(resourceID string) (Handle, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handleLocked(resourceID), nil
}

func (t *Table) handleLocked(resourceID string) Handle {
	if h, ok := t.index[resourceID]; ok {
		return h
	}
	// Clone: callers (the WebAssembly exports) may pass a string that
	// aliases a buffer they reuse; the table must own its keys.
	id := strings.Clone(resourceID)
	t.ids = append(t.ids, id)
	t.marks = append(t.marks, 0)
	h := Handle(len(t.ids))
	t.index[id] = h
	return h
}

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically, exactly as Guard.Check.
func (t *Table) Check(resourceID string, token int64) (Decision, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return Decision{}, err
	}
	if err := ValidateToken(token); err != nil {
		return Decision{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkLocked(t.handleLocked(resourceID), token), nil
}

// CheckHandle is Check for the resource h names.
func (t *Table) CheckHandle(h Handle, token int64) (Decision, error) {
	if err := ValidateToken(token); err != nil {
		return Decision{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.validLocked(h) {
		return Decision{}, fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	return t.checkLocked(h, token), nil
}

func (t *Table) validLocked(h Handle) bool {
	return h >= 1 && int(h) <= len(t.marks)
}

func (t *Table) checkLocked(h Handle, token int64) Decision {
	d := Evaluate(t.marks[h-1], token)
	if d.Accepted {
		t.marks[h-1] = token
	}
	return d
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (t *Table) HighWater(resourceID string) (int64, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.index[resourceID]; ok {
		return t.marks[h-1], nil
	}
	return 0, nil
}

// HighWaterHandle is HighWater for the resource h names.
func (t *Table) HighWaterHandle(h Handle) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.validLocked(h) {
		return 0, fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	return t.marks[h-1], nil
}

// Seed raises the resource's high-water mark to at least token without
// making a decision, exactly as Guard.Seed. It returns the mark after seeding.
func (t *Table) Seed(resourceID string, token int64) (int64, error) {
	if err := ValidateResourceID(resourceID); err != nil {
		return 0, err
	}
	if err := ValidateToken(token); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.handleLocked(resourceID)
	if token > t.marks[h-1] {
		t.marks[h-1] = token
	}
	return t.marks[h-1], nil
}

// ResourceID returns the resource h names.
func (t *Table) ResourceID(h Handle) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.validLocked(h) {
		return "", fmt.Errorf("%w: %d", ErrUnknownHandle, h)
	}
	return t.ids[h-1], nil
}

// Marks returns a copy of every high-water mark, as Guard.Marks: resources
// that have a handle but no mark yet are left out.
func (t *Table) Marks() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64)
	for i, m := range t.marks {
		if m > 0 {
			out[t.ids[i]] = m
		}
	}
	return out
}
