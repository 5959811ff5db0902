package fenceview

import "time"

// Bounds on what one request may carry or ask for. Every entry point (the
// issuer, the JSON API, the RPC stream, the dashboard) checks against these,
// so they all refuse the same inputs.
const (
	// DefaultLease is the lease of an acquire that names none.
	DefaultLease = 30 * time.Second
	// MaxLease is the longest lease one grant or renewal may ask for.
	MaxLease = 24 * time.Hour
	// MaxWait is the longest an acquire may wait on the server.
	MaxWait = 5 * time.Minute
	// MaxSourceLen bounds a decision's source ("api:10.0.0.7", a plugin's name).
	MaxSourceLen = 200
	// MaxReasonLen bounds a reported refusal reason.
	MaxReasonLen = 64
	// MaxEnvelopeLen bounds a presented token's issuer and scope.
	MaxEnvelopeLen = 200
	// MaxDecisions is the most decisions one report may carry.
	MaxDecisions = 1000
	// MaxReportedMark is the highest mark a reported decision (a guard
	// elsewhere) or a fence may set on a resource this server never
	// issued a token for: 2^62, so that 2^62 grants remain above it. A
	// report claiming more is recorded as sent and raises the foreign-mark
	// alarm with its claim, but sets the mark to this bound only; a fence
	// presenting more is refused and changes nothing.
	MaxReportedMark = 1 << 62
)
