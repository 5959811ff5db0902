// Package fenceview holds the domain of the fenceview server: leases,
// fencing tokens, high-water marks and the events that record them, and the
// services the adapters consume (service.go): LockService, PrimitiveService,
// FenceService, ResourceService, EventService, MetricsService and
// HistoryService.
//
// The machinery lives under internal/, each package named after what it
// adapts: internal/issuer (the lock authority, implementing the services),
// internal/sqlite (the durable record, the history), internal/httpapi (the
// JSON API and event stream). Package server embeds all of it in a Go
// program. The resource-side rule itself is in guard, which has no
// dependencies so it can also be compiled to WebAssembly: guard.wasm is
// built from wasm/internal/guest and guard-extism.wasm from
// wasm/internal/extism, both on guard (and internal/merkle and
// internal/ed25519verify for signatures), never on this package.
package fenceview

import (
	"slices"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// Event types on the stream and in the history.
const (
	EventGrant   = "grant"
	EventRenew   = "renew"
	EventRelease = "release"
	EventExpire  = "expire"
	EventAccept  = "accept"
	EventReject  = "reject"
	// EventAlarm: something is unsafe; Reason says what (AlarmCounterBehind).
	EventAlarm = "alarm"
	// EventReset: an admin raised a resource's token counter to a floor.
	EventReset = "reset"
	// EventRecover: an admin set a poisoned or exhausted resource's counter
	// and mark back (Token: the new counter; Event.Replaced: the mark and
	// counter it replaced).
	EventRecover = "recover"
)

// ExpireForced is the Reason of an expire event an admin forced
// (LockService.ForceExpire); a lease that ran out has none.
const ExpireForced = "forced"

// AlarmCounterBehind: a guard reported a mark above the last token this
// server issued for the resource, so either its counter is behind the
// tokens in use (a database restored from an older copy) or someone
// reported a token never issued. Neither the counter nor the server's mark
// moves; an admin reset (with a floor) or recovery clears the alarm.
const AlarmCounterBehind = "counter-behind"

// AlarmForeignMark: the first token this server issued for a resource had
// to go above a mark set by tokens from elsewhere (presented to the
// server's guard or reported before any grant): a migration, or an id
// claimed in advance. An admin reset or recovery clears it.
const AlarmForeignMark = "foreign-mark"

// Grant is the answer to a successful acquire or renew.
type Grant struct {
	ResourceID string
	Holder     string
	HoldCount  int
	ExpiresAt  time.Time
	LeaseMs    int64
	Fencing    guard.Token
}

// LockState is the lock as seen by GET /v1/locks/{resource}.
type LockState struct {
	ResourceID string
	Locked     bool
	// Shared: the live holds are shared ones (a read phase), listed in
	// Holders; Holder and HoldCount are then the first of them.
	Shared    bool
	Holders   []HoldState
	Holder    string
	HoldCount int
	LastToken int64 // the last token issued for the resource, 0 if none (Resource.Token is the current grant's)
	ExpiresAt time.Time
	Remaining time.Duration
	LeaseMs   int64
	Waiters   int
	// AvailableAt is when a running lock-delay ends (zero when none runs).
	AvailableAt time.Time
}

// HoldState is one live shared hold, as LockState lists them.
type HoldState struct {
	Holder    string
	HoldCount int
	ExpiresAt time.Time
	Remaining time.Duration
}

// Hold is one holder's hold of a lock held in shared mode (a reader's):
// each renews and releases its own.
type Hold struct {
	Holder      string
	OwnerKey    string // the API key that took it (auth on); never shown
	HoldCount   int
	GrantedAt   time.Time
	ExpiresAt   time.Time
	LeaseMs     int64
	LockDelayMs int64
}

// Resource is what the server knows about one resource.
type Resource struct {
	ResourceID      string
	HighWaterMark   int64
	LastToken       int64
	Holder          string
	OwnerKey        string // the id of the API key that took the lock (auth on): with Holder, who may renew and release; never shown
	HoldCount       int
	Token           int64 // token of the current grant, 0 when free
	ExpiresAt       time.Time
	GrantedAt       time.Time
	LeaseMs         int64 // lease length of the current grant, for renew
	Accepted        int64
	Rejected        int64
	LastRejectionAt time.Time
	// CounterAlarm is the mark that showed the token counter behind the
	// tokens in use, kept until an admin reset; 0 when there is no alarm.
	CounterAlarm int64
	// LockDelayMs is the lock-delay of the current grant.
	LockDelayMs int64
	// AvailableAt is when the lock-delay of a lease that ran out without
	// a release ends; zero when none runs. Nobody is granted the lock
	// before it.
	AvailableAt time.Time
	// Permits is set on slot 0 of a semaphore: the semaphore's permits.
	Permits int
	// Election marks an election's lock; Value is its leader's value.
	Election bool
	Value    string
	// Readers are the live shared holds while the lock is held in shared
	// mode (a read phase), oldest first; Token is the phase's token, and
	// Holder, OwnerKey, HoldCount, GrantedAt, LeaseMs and LockDelayMs are
	// the first reader's, so everything that asks whether the lock is held
	// sees it held. ExpiresAt is the earliest reader's expiry, when the
	// sweep next has something to do. Empty when the lock is exclusive or
	// free.
	Readers []Hold
	// SharedPhase is the token of the lock's latest read phase, so the
	// server's fence can refuse a write with it (guard.ReasonSharedToken)
	// even once the phase is over. Kept in memory only: a restart
	// forgets it (signed tokens prove their mode wherever they go).
	SharedPhase int64
	// Expired is the last lease of the lock that ran out or was
	// force-expired and not released since, so that its holder's late
	// renew or release is told lease-expired rather than not-held; nil
	// when none. Kept in memory only: a restart forgets it.
	Expired *ExpiredLease
}

// ExpiredLease is a lease that ended without a release: whose it was (the
// holder and, with auth on, the key) and when it ended.
type ExpiredLease struct {
	Holder   string
	OwnerKey string
	At       time.Time
	Forced   bool // force-expired by an admin, rather than run out
}

// Event is one row of the history: a lease change or a fencing decision.
// Seq strictly increases, across restarts too.
type Event struct {
	Seq        int64
	Type       string
	ResourceID string
	Token      int64
	Holder     string
	// Presented and Required are, on a reject, the token presented and
	// the mark it needed. Three other types reuse the two numbers (the
	// history's columns and the wire's names stay as they are): on an
	// alarm Required is the last token issued, on a reset the floor asked
	// for, and on a recover Presented and Required are the mark and the
	// counter it replaced: read those with Replaced.
	Presented int64
	Required  int64
	Reason    string
	Source    string
	At        time.Time
	// Value is an election's leader value (proclaim, and an election's grant).
	Value string
	// LockDelayMs is the lock-delay an expire starts.
	LockDelayMs int64
	// Permits is a semaphore's permits, set by a permits event.
	Permits int
	// Access is AccessRead on the accept or reject of a read; empty for
	// a write's and for every other event.
	Access string
}

// Replaced is what a recover event set back: the high-water mark and the
// token counter before it (zero for other types).
func (e Event) Replaced() (mark, counter int64) {
	if e.Type != EventRecover {
		return 0, 0
	}
	return e.Presented, e.Required
}

// Report is a fencing decision made elsewhere (a plugin's guard) and sent
// to the server to be recorded.
type Report struct {
	ResourceID string
	Token      int64
	Accepted   bool
	Required   int64
	Reason     string
	Source     string
	At         time.Time
	// Signature is the token's signature as the guard received it, if any.
	Signature string
	// Access is AccessRead for a guard's decision on a read; empty or
	// AccessWrite for a write's.
	Access string
	// Proven is set by the issuer, never from input: Signature is a valid
	// signature of this issuer's keys for ResourceID and Token, so the token
	// was really issued (signed tokens, token safety).
	Proven bool
}

// RejectionFilter selects rejections from the history, newest first (by
// time, then by sequence number). Zero fields match everything. Before is
// the cursor: only rejections older than it.
type RejectionFilter struct {
	ResourceID string
	Reason     string
	Source     string
	Since      time.Time
	Until      time.Time
	Before     Cursor
	Limit      int
	// Prefixes, when not empty, keeps only resources whose id starts with
	// one of them (a key limited to some resources).
	Prefixes []string
}

// Cursor is a place in the rejection history: the time and sequence number
// of the last row of a page. The zero Cursor is the newest end.
type Cursor struct {
	At  time.Time
	Seq int64
}

// CursorOf is the cursor just past e.
func CursorOf(e Event) Cursor { return Cursor{At: e.At, Seq: e.Seq} }

// IsZero reports whether c is the newest end of the history.
func (c Cursor) IsZero() bool { return c.Seq == 0 }

// String encodes c for a URL: "<unix milliseconds>-<seq>".
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(c.At.UnixMilli(), 10) + "-" + strconv.FormatInt(c.Seq, 10)
}

// Fence is a token presented to the server's own guard.
type Fence struct {
	ResourceID string
	Token      guard.Token
	Holder     string // optional: who says they write
	Source     string // where the write came from
	// Mode is how the fence judges the token: FenceModeMark (or empty)
	// or FenceModeCurrent.
	Mode string
	// Access is what the fence guards: AccessRead, or AccessWrite (or
	// empty). The rule is the same; a write with a shared grant's token
	// is refused (guard.ReasonSharedToken).
	Access string
}

// What a fenced check guards (X-Fencing-Access, "access").
const (
	AccessWrite = "write"
	AccessRead  = "read"
)

// ParseAccess checks an access given by a request; empty is AccessWrite.
func ParseAccess(v string) (string, error) {
	return parseChoice("access", v, AccessWrite, AccessRead, AccessWrite)
}

// parseChoice returns v when it is one of the two choices, def when it is
// empty; else an EINVALID error naming what and the choices.
func parseChoice(what, v, def string, choices ...string) (string, error) {
	if v == "" {
		return def, nil
	}
	if slices.Contains(choices, v) {
		return v, nil
	}
	if len(v) > 20 {
		v = v[:20] + "..."
	}
	return "", Errorf(EINVALID, "%s %q: use %q or %q", what, v, choices[0], choices[1])
}

// The server's fence modes. In mode mark, the rule, a token at or above the
// resource's high-water mark is accepted. Mode current also refuses a token
// below the last one issued for the resource (superseded): only the current
// holder may write, as etcd's IsOwner compare. The mark does not move then.
const (
	FenceModeMark    = "mark"
	FenceModeCurrent = "current"
)

// ParseFenceMode checks a mode given by a request or a flag; empty is
// FenceModeMark.
func ParseFenceMode(v string) (string, error) {
	return parseChoice("fencing mode", v, FenceModeMark, FenceModeMark, FenceModeCurrent)
}
