package wasm

import (
	"context"
	"errors"
	"fmt"
)

// SeedMap raises each resource's high-water mark to at least the given
// token (see Seed). Marks of 0 or less mean "none" and are skipped. It seeds
// every valid entry and returns the errors of the others, joined.
func (g *Guard) SeedMap(marks map[string]int64) error {
	var errs []error
	for id, token := range marks {
		if token <= 0 {
			continue
		}
		if _, err := g.Seed(id, token); err != nil {
			errs = append(errs, fmt.Errorf("seeding %q: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// SeedFromServer raises the high-water marks to those a fenceview server
// knows (GET /v1/resources), so a guard that restarts refuses every token
// the server's resources already moved past. It returns how many resources
// it seeded.
func (g *Guard) SeedFromServer(ctx context.Context, s Server) (int, error) {
	c, err := s.client()
	if err != nil {
		return 0, fmt.Errorf("wasm guard: seeding from server: %w", err)
	}
	defer c.Close()
	marks, err := c.HighWaterMarks(ctx)
	if err != nil {
		return 0, fmt.Errorf("wasm guard: seeding from server: %w", err)
	}
	n := 0
	var errs []error
	for id, token := range marks {
		if _, err := g.Seed(id, token); err != nil {
			errs = append(errs, fmt.Errorf("seeding %q: %w", id, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
