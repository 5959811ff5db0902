package load

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Checker checks, per resource, that every granted token is above the one
// granted before it. A grant is observed before its lock is released, so
// grants of one resource are observed in the order they were issued and any
// token not above the last one is a violation. Lock-free: one
// compare-and-swap per grant.
type Checker struct {
	last       []atomic.Int64
	violations atomic.Int64
	mu         sync.Mutex
	first      []string
}

// NewChecker checks n resources.
func NewChecker(n int) *Checker { return &Checker{last: make([]atomic.Int64, n)} }

// Observe records token as granted for resource r and reports whether it
// was strictly above the previous one.
func (c *Checker) Observe(r int, token int64) bool {
	for {
		old := c.last[r].Load()
		if token <= old {
			c.Violate(fmt.Sprintf("resource %d: token %d granted after %d", r, token, old))
			return false
		}
		if c.last[r].CompareAndSwap(old, token) {
			return true
		}
	}
}

// Last is the newest token observed for resource r (0 if none).
func (c *Checker) Last(r int) int64 { return c.last[r].Load() }

// Violate records a broken guarantee.
func (c *Checker) Violate(msg string) {
	c.violations.Add(1)
	c.mu.Lock()
	if len(c.first) < 20 {
		c.first = append(c.first, msg)
	}
	c.mu.Unlock()
}

// Violations returns the first recorded violations (up to 20) and the total.
func (c *Checker) Violations() ([]string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.first...), c.violations.Load()
}
