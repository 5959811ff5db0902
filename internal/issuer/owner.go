package issuer

import (
	"context"

	"github.com/fenceview/fenceview"
)

// ownerOf is the API key a lock call acts for (fenceview.WithOwnerKey).
func ownerOf(ctx context.Context) string { return fenceview.OwnerKeyFrom(ctx) }

var errNotOwner = fenceview.Errorf(fenceview.ECONFLICT, "not lock owner")
