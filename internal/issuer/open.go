package issuer

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview"
)

// Record is a durable record a service can start from: the Store it writes
// through, plus what it reads once at start-up (*sqlite.DB implements it).
type Record interface {
	Store
	// Issuer returns the issuer id; with want set it becomes (and stays)
	// the stored id, otherwise the stored one is returned, created on
	// first start.
	Issuer(ctx context.Context, want string) (string, error)
	// Resources returns every resource row.
	Resources(ctx context.Context) ([]*fenceview.Resource, error)
	// MaxSeq returns the highest event sequence number recorded, 0 if none.
	MaxSeq(ctx context.Context) (int64, error)
}

// Open starts a service over rec from what rec holds: the issuer id
// (cfg.Issuer, when set, becomes the stored id), the resources and the last
// event sequence number. cfg.Issuer of the running service is the stored id.
func Open(ctx context.Context, rec Record, cfg Config) (*Service, error) {
	id, err := rec.Issuer(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("reading issuer id: %w", err)
	}
	resources, err := rec.Resources(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading resources: %w", err)
	}
	lastSeq, err := rec.MaxSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading history: %w", err)
	}
	cfg.Issuer = id
	return New(rec, resources, lastSeq, cfg), nil
}
