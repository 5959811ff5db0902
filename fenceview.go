// Package fenceview holds the domain of the fenceview server: leases,
// fencing tokens, high-water marks and the events that record them.
//
// Adapters live in subpackages named after what they adapt: sqlite (the
// durable record), issuer (the lock authority), httpapi (the JSON API and
// event stream). The resource-side rule itself is in guard, which has no
// dependencies so it can also be compiled to WebAssembly.
package fenceview

import (
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
)

// AlarmCounterBehind: a high-water mark above the last token this server
// issued for the resource, so its counter is behind the tokens in use (a
// database restored from an older copy, or a plugin accepted a token from
// elsewhere). Tokens still go above the mark; an admin reset clears it.
const AlarmCounterBehind = "counter-behind"

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
	Holder     string
	HoldCount  int
	Token      int64 // last token issued, 0 if none
	ExpiresAt  time.Time
	Remaining  time.Duration
	LeaseMs    int64
	Waiters    int
}

// Resource is what the server knows about one resource.
type Resource struct {
	ResourceID      string
	HighWaterMark   int64
	LastToken       int64
	Holder          string
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
}

// Event is one row of the history: a lease change or a fencing decision.
// Seq strictly increases, across restarts too.
type Event struct {
	Seq        int64
	Type       string
	ResourceID string
	Token      int64
	Holder     string
	Presented  int64
	Required   int64
	Reason     string
	Source     string
	At         time.Time
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
}

// RejectionFilter selects rejections from the history. Zero fields match
// everything. Before is the cursor: only rejections with Seq < Before.
type RejectionFilter struct {
	ResourceID string
	Reason     string
	Source     string
	Since      time.Time
	Until      time.Time
	Before     int64
	Limit      int
}

// Fence is a token presented to the server's own guard.
type Fence struct {
	ResourceID string
	Token      guard.Token
	Holder     string // optional: who says they write
	Source     string // where the write came from
}
