package issuer

import "github.com/fenceview/fenceview"

// kinds is the number of kinds of grant, the length of per-kind arrays.
const kinds = len(fenceview.Kinds)

// The issuer implements every service of the lock authority (Services
// is all of them).
var _ fenceview.Services = (*Service)(nil)
