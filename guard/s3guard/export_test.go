package s3guard

import "time"

// SetClock gives a guard built from a key source the clock it times its
// key fetches with.
func SetClock(g *Guard, now func() time.Time) {
	if g.sig != nil {
		g.sig.now = now
	}
}
