package issuer

import "github.com/fenceview/fenceview"

// The service's answers are domain types, defined in the root package;
// these names let the issuer's own code and tests say them unqualified.
type (
	ResourceQuery      = fenceview.ResourceQuery
	ResourceKey        = fenceview.ResourceKey
	ResourcePage       = fenceview.ResourcePage
	Scope              = fenceview.Scope
	Kind               = fenceview.Kind
	Metrics            = fenceview.Metrics
	KindCount          = fenceview.KindCount
	ReasonCount        = fenceview.ReasonCount
	LockTimes          = fenceview.LockTimes
	DurationStats      = fenceview.DurationStats
	Histogram          = fenceview.Histogram
	LockTimeHistograms = fenceview.LockTimeHistograms
	Published          = fenceview.Published
)

// kinds is the number of kinds of grant, the length of per-kind arrays.
const kinds = len(fenceview.Kinds)

// The issuer implements every service of the lock authority.
var (
	_ fenceview.LockService      = (*Service)(nil)
	_ fenceview.PrimitiveService = (*Service)(nil)
	_ fenceview.FenceService     = (*Service)(nil)
	_ fenceview.ResourceService  = (*Service)(nil)
	_ fenceview.EventService     = (*Service)(nil)
	_ fenceview.MetricsService   = (*Service)(nil)
	_ fenceview.Services         = (*Service)(nil)
)
