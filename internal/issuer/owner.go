package issuer

import (
	"context"
	"fmt"

	"github.com/fenceview/fenceview"
)

// ownerOf is the API key a lock call acts for (fenceview.WithOwnerKey).
func ownerOf(ctx context.Context) string { return fenceview.OwnerKeyFrom(ctx) }

// notHolderError is the refusal of a renew or release of r by holder
// (with key owner) who does not hold it: lease-expired when it is the
// holder of r's last lease that ended without a release, not-owner when
// another holds r, not-held when r is free.
func notHolderError(r *fenceview.Resource, holder, owner string) error {
	if x := r.Expired; x != nil && x.Holder == holder && x.OwnerKey == owner {
		how := "ran out"
		if x.Forced {
			how = "was force-expired"
		}
		return &fenceview.Error{Code: fenceview.ELEASEEXPIRED,
			Message: fmt.Sprintf("the lease of %q on %q %s at %s; acquire the lock again for a new token",
				holder, r.ResourceID, how, x.At.UTC().Format("2006-01-02T15:04:05.000Z")),
			Fields: map[string]any{"expiredAt": x.At}}
	}
	if r.Holder != "" {
		return errNotOwner
	}
	return errNotHeld
}

var (
	errNotOwner = fenceview.Errorf(fenceview.ENOTOWNER, "not lock owner")
	errNotHeld  = fenceview.Errorf(fenceview.ENOTHELD, "lock not held")
)
