package sqlite

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fenceview/fenceview"
)

// holdRecord is one shared hold as the readers column keeps it: times in
// Unix milliseconds, as every other time of a resource row.
type holdRecord struct {
	Holder      string `json:"h"`
	OwnerKey    string `json:"o,omitempty"`
	HoldCount   int    `json:"n"`
	GrantedAt   int64  `json:"g"`
	ExpiresAt   int64  `json:"e"`
	LeaseMs     int64  `json:"l"`
	LockDelayMs int64  `json:"d,omitempty"`
}

// encodeReaders is the readers column of r: "" for a lock not held
// shared.
func encodeReaders(r *fenceview.Resource) string {
	if len(r.Readers) == 0 {
		return ""
	}
	recs := make([]holdRecord, len(r.Readers))
	for i, h := range r.Readers {
		recs[i] = holdRecord{Holder: h.Holder, OwnerKey: h.OwnerKey, HoldCount: h.HoldCount,
			GrantedAt: h.GrantedAt.UnixMilli(), ExpiresAt: h.ExpiresAt.UnixMilli(), LeaseMs: h.LeaseMs, LockDelayMs: h.LockDelayMs}
	}
	b, _ := json.Marshal(recs) // strings and integers: it cannot fail
	return string(b)
}

// decodeReaders reads a readers column into r.Readers.
func decodeReaders(r *fenceview.Resource, s string) error {
	if s == "" {
		return nil
	}
	var recs []holdRecord
	if err := json.Unmarshal([]byte(s), &recs); err != nil {
		return fmt.Errorf("sqlite: the shared holds of %q: %w", r.ResourceID, err)
	}
	r.Readers = make([]fenceview.Hold, len(recs))
	for i, h := range recs {
		r.Readers[i] = fenceview.Hold{Holder: h.Holder, OwnerKey: h.OwnerKey, HoldCount: h.HoldCount,
			GrantedAt: time.UnixMilli(h.GrantedAt).UTC(), ExpiresAt: time.UnixMilli(h.ExpiresAt).UTC(), LeaseMs: h.LeaseMs, LockDelayMs: h.LockDelayMs}
	}
	return nil
}
