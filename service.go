package fenceview

import (
	"context"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// The lock authority's services, as the adapters consume them: the HTTP
// API, the dashboard, the demo, cluster mode and the metrics each take the
// ones they call. internal/issuer implements every one of them (and
// asserts it); the history is internal/sqlite's.

// LockService grants, renews and ends leases on locks.
type LockService interface {
	Acquire(ctx context.Context, req AcquireRequest) (Grant, error)
	Renew(ctx context.Context, resourceID, holder string, lease time.Duration) (Grant, error)
	Release(ctx context.Context, resourceID, holder string) (int, error)
	// ForceExpire ends a lease at once (admin).
	ForceExpire(ctx context.Context, resourceID string) error
	// ResetCounter raises a resource's token counter to floor (admin).
	ResetCounter(ctx context.Context, resourceID string, floor int64) (Resource, error)
	// Recover sets a poisoned or exhausted resource's counter and mark
	// back to to (admin).
	Recover(ctx context.Context, resourceID string, to int64) (Resource, error)
	// Issuer is the id written into every token this authority issues.
	Issuer() string
}

// PrimitiveService is the primitives, each made of lock
// resources: semaphores, multi-locks and elections.
type PrimitiveService interface {
	AcquirePermit(ctx context.Context, req PermitRequest) (Grant, error)
	ReleasePermit(ctx context.Context, name, holder string, slot int) (int, error)
	SetPermits(ctx context.Context, name string, permits int) (Semaphore, error)
	AcquireAll(ctx context.Context, req AcquireAllRequest) ([]Grant, error)
	ReleaseAll(ctx context.Context, resourceIDs []string, holder string) (Released, error)
	Campaign(ctx context.Context, req CampaignRequest) (Leader, Grant, error)
	Proclaim(ctx context.Context, election, candidate, value string) (Leader, error)
	Resign(ctx context.Context, election, candidate string) error
	RenewLeadership(ctx context.Context, election, candidate string, lease time.Duration) (Leader, Grant, error)
}

// FenceService decides fenced writes presented to the server's own guard
// and records the decisions of guards elsewhere.
type FenceService interface {
	Fence(ctx context.Context, f Fence) (guard.Decision, error)
	Report(ctx context.Context, reports []Report) (int, error)
}

// ResourceService reads what the authority knows of its resources, and of
// the locks, semaphores and elections made of them.
//
// Two ways page through them: ListResources, by id, walks from the
// cursor and costs about a page (the JSON API's list); SelectResources
// sorts by any of SortKeys and counts the matches, so it walks every
// resource in scope (the dashboard's table).
type ResourceService interface {
	Resource(resourceID string) (Resource, error)
	Lock(resourceID string) (LockState, error)
	Semaphore(name string) (Semaphore, error)
	// Leader is nil when the election has none.
	Leader(election string) (*Leader, error)
	// ListResources returns up to limit resources whose ids start with
	// prefix, sort after the id after ("" for the first page) and that
	// scope sees, by id, and whether more follow.
	ListResources(prefix, after string, limit int, scope Scope) (page []Resource, more bool)
	SelectResources(q ResourceQuery) ResourcePage
	// Alarmed is up to limit resources with a counter alarm, and how many.
	Alarmed(limit int, scope Scope) ([]Resource, int)
	// Totals sums every resource scope sees, without listing them.
	Totals(scope Scope) (resources, held int, accepted, rejected int64)
	// LockTimes is the wait and hold times of a lock's recent grants.
	LockTimes(resourceID string) LockTimes
	// LastSeq is the sequence number of the last durable event.
	LastSeq() int64
}

// EventService delivers committed events as they happen.
type EventService interface {
	// Subscribe starts a subscription to the events of resourceID ("" for
	// all), buffering up to buffer batches.
	Subscribe(resourceID string, buffer int) Subscription
	Unsubscribe(sub Subscription)
}

// MetricsService is the authority's counters, for /metrics and the
// dashboard's metrics page.
type MetricsService interface {
	Metrics() Metrics
	LockTimeHistograms() []LockTimeHistograms
}

// Services is every service of the lock authority in one value: what a
// server builds its HTTP API over.
type Services interface {
	LockService
	PrimitiveService
	FenceService
	ResourceService
	EventService
	MetricsService
}

// HistoryService reads the durable record of events (internal/sqlite
// implements it).
type HistoryService interface {
	// Rejections is a page of refusals, newest first.
	Rejections(ctx context.Context, f RejectionFilter) ([]Event, error)
	// EventsAfter is up to limit events after the sequence number after,
	// of resourceID ("" for all), oldest first.
	EventsAfter(ctx context.Context, after int64, resourceID string, limit int) ([]Event, error)
	// ResourceEvents is a resource's newest limit events, newest first.
	ResourceEvents(ctx context.Context, resourceID string, limit int) ([]Event, error)
	// HolderEvents is a holder's recent events within prefixes (none: all),
	// reading at most scan rows.
	HolderEvents(ctx context.Context, holder string, prefixes []string, scan, limit int) ([]Event, error)
	// MinuteCounts is the per-minute counts from since (inclusive) to
	// until (exclusive), oldest first.
	MinuteCounts(ctx context.Context, since, until time.Time) ([]MinuteCount, error)
	// RejectionSources and RejectionReasons are the sources and reasons
	// of refusals, most frequent first, with their counts.
	RejectionSources(ctx context.Context, limit int) ([]string, []int64, error)
	RejectionReasons(ctx context.Context) ([]string, []int64, error)
	// Ping checks the record can be read.
	Ping(ctx context.Context) error
}
