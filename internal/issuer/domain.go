package issuer

import "github.com/fenceview/fenceview"

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
