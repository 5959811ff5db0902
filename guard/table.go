package guard

import (
	"errors"
	"sync"
)

// ErrUnknownHandle is returned for a Handle a Table or Ledger never gave out.
var ErrUnknownHandle = errors.New("unknown resource handle")

// Handle names one resource of a Table by a small integer, so a hot path can
// check tokens without hashing the resource id on every call. Handles start
// at 1; the zero Handle names nothing.
type Handle uint32

// Table is a guard whose resources can also be named by Handle. It applies
// the same rule (Evaluate) and the same validation as Guard, and gives the
// same decisions and errors for the same calls; it differs only in storage:
// marks live in a slice indexed by handle, and ids are resolved to handles
// once.
//
// A handle, once given, names its resource for the life of the Table, so the
// table only grows (like Guard's map). It is safe for concurrent use: it is
// a Ledger behind a mutex.
type Table struct {
	mu sync.Mutex
	l  Ledger
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{} }

// Handle returns the handle of resourceID, giving it one on first use.
// Resolving a handle does not give the resource a high-water mark.
func (t *Table) Handle(resourceID string) (Handle, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.Handle(resourceID)
}

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically, exactly as Guard.Check.
func (t *Table) Check(resourceID string, token int64) (Decision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.Check(resourceID, token)
}

// CheckHandle is Check for the resource h names.
func (t *Table) CheckHandle(h Handle, token int64) (Decision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.CheckHandle(h, token)
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (t *Table) HighWater(resourceID string) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.HighWater(resourceID)
}

// HighWaterHandle is HighWater for the resource h names.
func (t *Table) HighWaterHandle(h Handle) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.HighWaterHandle(h)
}

// Seed raises the resource's high-water mark to at least token without
// making a decision, exactly as Guard.Seed. It returns the mark after seeding.
func (t *Table) Seed(resourceID string, token int64) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.Seed(resourceID, token)
}

// ResourceID returns the resource h names.
func (t *Table) ResourceID(h Handle) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.ResourceID(h)
}

// Marks returns a copy of every high-water mark, as Guard.Marks: resources
// that have a handle but no mark yet are left out.
func (t *Table) Marks() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l.Marks()
}
