package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// maxResourcesBody bounds the GET /v1/resources response read.
const maxResourcesBody = 64 << 20

// SeedFromServer raises the high-water marks to those a fenceview server
// knows (GET /v1/resources), so a guard that restarts refuses every token
// the server's resources already moved past. It returns how many resources
// it seeded.
func (g *Guard) SeedFromServer(ctx context.Context, s Server) (int, error) {
	resp, err := s.do(ctx, http.MethodGet, "/v1/resources", nil)
	if err != nil {
		return 0, fmt.Errorf("wasm guard: seeding from server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("wasm guard: seeding from server: GET /v1/resources: %s", resp.Status)
	}
	var body struct {
		Resources []struct {
			ResourceID    string `json:"resourceId"`
			HighWaterMark int64  `json:"highWaterMark"`
		} `json:"resources"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResourcesBody)).Decode(&body); err != nil {
		return 0, fmt.Errorf("wasm guard: seeding from server: %w", err)
	}
	n := 0
	var errs []error
	for _, r := range body.Resources {
		if r.HighWaterMark <= 0 {
			continue
		}
		if _, err := g.Seed(r.ResourceID, r.HighWaterMark); err != nil {
			errs = append(errs, fmt.Errorf("seeding %q: %w", r.ResourceID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
