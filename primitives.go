package fenceview

import (
	"strconv"
	"strings"
	"time"
)

// Every primitive (semaphores, multi-locks, elections) is built from
// ordinary lock resources, so tokens, marks, signatures, guards, history
// and ownership apply to each unchanged: a semaphore is N locks (its
// slots), a multi-lock is one atomic change over several locks, an election
// is a lock plus a value whose token is the term.

// Bounds of the primitives' inputs.
const (
	// MaxLockDelay is the longest lock-delay an acquire may ask for.
	MaxLockDelay = 60 * time.Second
	// MaxPermits is the most permits (slots) a semaphore may have.
	MaxPermits = 1024
	// MaxSemaphoreNameLen keeps a slot's id ("<name>#1023") within
	// guard.MaxResourceIDLen.
	MaxSemaphoreNameLen = 150
	// MaxLockAll is the most locks one multi-lock may take.
	MaxLockAll = 64
	// MaxElectionValue bounds a leader's value, in bytes.
	MaxElectionValue = 4 << 10
)

// Event types of the primitives and lock-delay.
const (
	// EventProclaim: an election's leader changed its value (Value), same
	// term (Token).
	EventProclaim = "proclaim"
	// EventPermits: an admin set a semaphore's permits (Permits), recorded
	// on its slot 0.
	EventPermits = "permits"
)

// AcquireRequest asks for the lock on ResourceID for Holder.
type AcquireRequest struct {
	ResourceID string
	Holder     string
	// Lease 0 is DefaultLease, or for a re-entrant grant the current
	// lease's length.
	Lease time.Duration
	// Wait is how long to wait for the lock to be free; 0 answers at once.
	Wait time.Duration
	// LockDelay, when the lease granted runs out without a release, keeps
	// the lock from everyone until the lease's end plus LockDelay.
	LockDelay time.Duration
	// Shared asks for a shared (read) hold: held with other shared holds,
	// never with an exclusive one. Readers of one read phase share its
	// token.
	Shared bool
}

// PermitRequest asks for one permit (slot) of the semaphore Semaphore of
// Permits permits.
type PermitRequest struct {
	Semaphore string
	Holder    string
	Permits   int
	Lease     time.Duration
	Wait      time.Duration
	LockDelay time.Duration
}

// AcquireAllRequest asks for every lock in ResourceIDs at once, or none.
type AcquireAllRequest struct {
	ResourceIDs []string
	Holder      string
	Lease       time.Duration
	Wait        time.Duration
	LockDelay   time.Duration
}

// Released is the answer to a release of several locks.
type Released struct {
	Released []string // one hold of each given up
	NotHeld  []string // not held by the caller: nothing changed for them
}

// Semaphore is a semaphore's state: its permits and the slots held.
type Semaphore struct {
	Name    string
	Permits int
	Held    []Slot // by slot number
	Free    int
	Waiters int
}

// Slot is one held slot of a semaphore.
type Slot struct {
	Slot       int
	ResourceID string
	Holder     string
	Token      int64
	ExpiresAt  time.Time
}

// SlotID is the lock resource of slot of the semaphore name.
func SlotID(name string, slot int) string { return name + "#" + strconv.Itoa(slot) }

// ParseSlotID splits a slot's resource id into its semaphore and slot
// number; ok is false for an id that names no slot.
func ParseSlotID(id string) (name string, slot int, ok bool) {
	i := strings.LastIndexByte(id, '#')
	if i <= 0 || i == len(id)-1 || strings.IndexByte(id[:i], '#') >= 0 {
		return "", 0, false
	}
	digits := id[i+1:]
	if len(digits) > 4 || (len(digits) > 1 && digits[0] == '0') {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n >= MaxPermits || digits[0] == '+' || digits[0] == '-' {
		return "", 0, false
	}
	return id[:i], n, true
}

// CampaignRequest asks that Candidate lead the election Election.
type CampaignRequest struct {
	Election  string
	Candidate string
	Value     string
	Lease     time.Duration
	Wait      time.Duration
}

// Leader is an election's leader: the holder of the election's lock. Term
// is the lock's token, so a guard refuses a deposed leader's writes.
type Leader struct {
	Candidate string
	Value     string
	Term      int64
	Since     time.Time
	ExpiresAt time.Time
}

// IsZero reports whether l is no leader.
func (l Leader) IsZero() bool { return l.Term == 0 }
