package fenceview

import "math"

// MaxIssued is the highest token a grant may take. 2^63-1 itself is never
// reached by counting, so no arithmetic on a token can overflow.
const MaxIssued = math.MaxInt64 - 1

// NextToken is the token the next grant on r takes: above every token
// issued and every high-water mark recorded; 0 when the resource's tokens
// are exhausted (see the recovery call).
func NextToken(r Resource) int64 {
	top := max(r.LastToken, r.HighWaterMark)
	if top >= MaxIssued {
		return 0
	}
	return top + 1
}
