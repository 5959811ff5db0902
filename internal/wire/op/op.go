// Package op declares each operation of fenceview's API once: its RPC op,
// its JSON API route, what its path names and the request fields it
// takes. The server's operation table (internal/httpapi/ops.go) adds who
// may call it, how admission sees it and the function that serves it; the
// Go client's calls, the RPC stream's field checks and the OpenAPI
// document's routes (held equal by a test) all read these.
package op

import (
	"strings"

	"github.com/fenceview/fenceview/internal/wire"
)

// Spec is one operation of the API as every side of the wire sees it.
type Spec struct {
	Op     string // the RPC stream's op; "" when only the JSON API has it
	Method string
	Path   string // the JSON API's path; {resource} or {name} names the target
	// Fields are the body's (the RPC line adds id, op, and the resource or
	// name); anything else is refused.
	Fields wire.Fields
	// EmptyBody: the JSON body may be empty (a fence's token may come in
	// a header).
	EmptyBody bool
	// Idempotent: sending it twice does what sending it once does, so a
	// client may send it again after a 503 that may or may not have done it.
	Idempotent bool
}

// Route is the JSON API's pattern of s, "METHOD /path".
func (s *Spec) Route() string { return s.Method + " " + s.Path }

// Target is what s's path names: "resource" (a lock's id), "name" (a
// semaphore's or an election's) or "" (none: a multi-lock names its locks
// in its body).
func (s *Spec) Target() string {
	switch {
	case strings.Contains(s.Path, "{resource}"):
		return "resource"
	case strings.Contains(s.Path, "{name}"):
		return "name"
	}
	return ""
}

// MayWait reports whether a call of s may wait for a lock (it takes waitMs).
func (s *Spec) MayWait() bool { return s.Fields&wire.FieldsOf("waitMs") != 0 }

// LineFields are the fields of s's request line on the RPC stream.
func (s *Spec) LineFields() wire.Fields {
	f := s.Fields | wire.FieldsOf("id", "op")
	switch s.Target() {
	case "resource":
		f |= wire.FieldsOf("resource")
	case "name":
		f |= wire.FieldsOf("name")
	}
	return f
}

// The operations.
var (
	// Locks.
	Acquire = Spec{Op: wire.OpAcquire, Method: "POST", Path: "/v1/locks/{resource}/acquire", Fields: wire.FieldsOf("holder", "leaseMs", "waitMs", "lockDelayMs", "shared")}
	Renew   = Spec{Op: wire.OpRenew, Method: "POST", Path: "/v1/locks/{resource}/renew", Fields: wire.FieldsOf("holder", "leaseMs"), Idempotent: true}
	Release = Spec{Op: wire.OpRelease, Method: "POST", Path: "/v1/locks/{resource}/release", Fields: wire.FieldsOf("holder")}
	Lock    = Spec{Op: wire.OpLock, Method: "GET", Path: "/v1/locks/{resource}", Idempotent: true}
	Expire  = Spec{Method: "POST", Path: "/v1/locks/{resource}/expire"}
	Reset   = Spec{Method: "POST", Path: "/v1/locks/{resource}/reset"}
	Recover = Spec{Method: "POST", Path: "/v1/locks/{resource}/recover"}

	// Fenced writes and the guards' reports.
	Fence = Spec{Op: wire.OpFence, Method: "POST", Path: "/v1/fence/{resource}",
		Fields: wire.FieldsOf("token", "issuer", "scope", "holder", "source", "signature", "mode", "access"), EmptyBody: true, Idempotent: true}
	Decisions = Spec{Method: "POST", Path: "/v1/decisions"}

	// Semaphores.
	SemaphoreAcquire = Spec{Op: wire.OpSemaphoreAcquire, Method: "POST", Path: "/v1/semaphores/{name}/acquire", Fields: wire.FieldsOf("holder", "permits", "leaseMs", "waitMs", "lockDelayMs")}
	SemaphoreRelease = Spec{Op: wire.OpSemaphoreRelease, Method: "POST", Path: "/v1/semaphores/{name}/release", Fields: wire.FieldsOf("holder", "slot")}
	SemaphorePermits = Spec{Op: wire.OpSemaphorePermits, Method: "PUT", Path: "/v1/semaphores/{name}", Fields: wire.FieldsOf("permits"), Idempotent: true}
	Semaphore        = Spec{Op: wire.OpSemaphore, Method: "GET", Path: "/v1/semaphores/{name}", Idempotent: true}

	// Multi-locks: three segments, where a lock's routes have four, so no
	// lock's route can take these, whatever the lock is called.
	AcquireAll = Spec{Op: wire.OpAcquireAll, Method: "POST", Path: "/v1/locks/acquire-all", Fields: wire.FieldsOf("resources", "holder", "leaseMs", "waitMs", "lockDelayMs")}
	ReleaseAll = Spec{Op: wire.OpReleaseAll, Method: "POST", Path: "/v1/locks/release-all", Fields: wire.FieldsOf("resources", "holder")}

	// Elections.
	Campaign      = Spec{Op: wire.OpCampaign, Method: "POST", Path: "/v1/elections/{name}/campaign", Fields: wire.FieldsOf("candidate", "value", "leaseMs", "waitMs")}
	Proclaim      = Spec{Op: wire.OpProclaim, Method: "POST", Path: "/v1/elections/{name}/proclaim", Fields: wire.FieldsOf("candidate", "value"), Idempotent: true}
	Resign        = Spec{Op: wire.OpResign, Method: "POST", Path: "/v1/elections/{name}/resign", Fields: wire.FieldsOf("candidate")}
	ElectionRenew = Spec{Op: wire.OpElectionRenew, Method: "POST", Path: "/v1/elections/{name}/renew", Fields: wire.FieldsOf("candidate", "leaseMs"), Idempotent: true}
	Election      = Spec{Op: wire.OpElection, Method: "GET", Path: "/v1/elections/{name}", Idempotent: true}

	// Resources and history.
	Resources  = Spec{Method: "GET", Path: "/v1/resources", Idempotent: true}
	Resource   = Spec{Method: "GET", Path: "/v1/resources/{resource}", Idempotent: true}
	Rejections = Spec{Method: "GET", Path: "/v1/rejections", Idempotent: true}

	// Streams.
	Events = Spec{Method: "GET", Path: "/v1/events"}
	RPC    = Spec{Method: "GET", Path: "/v1/rpc"}

	// Keys: the signing keys guards verify with, and API keys.
	SigningKeys      = Spec{Method: "GET", Path: "/v1/signing-keys", Idempotent: true}
	RotateSigningKey = Spec{Method: "POST", Path: "/v1/signing-keys"}
	RemoveSigningKey = Spec{Method: "DELETE", Path: "/v1/signing-keys/{keyId}"}
	CreateKey        = Spec{Method: "POST", Path: "/v1/auth/keys"}
	Keys             = Spec{Method: "GET", Path: "/v1/auth/keys", Idempotent: true}
	RevokeKey        = Spec{Method: "DELETE", Path: "/v1/auth/keys/{id}"}
)

// All lists every operation, in the order above.
var All = []*Spec{
	&Acquire, &Renew, &Release, &Lock, &Expire, &Reset, &Recover,
	&Fence, &Decisions,
	&SemaphoreAcquire, &SemaphoreRelease, &SemaphorePermits, &Semaphore,
	&AcquireAll, &ReleaseAll,
	&Campaign, &Proclaim, &Resign, &ElectionRenew, &Election,
	&Resources, &Resource, &Rejections, &Events, &RPC,
	&SigningKeys, &RotateSigningKey, &RemoveSigningKey, &CreateKey, &Keys, &RevokeKey,
}
