package httpapi

import (
	"context"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// attribute is the source recorded for a fence or a reported decision.
// With auth on it starts with who the server authenticated, "key:<key id>"
// or "admin" for the admin token, and the caller's own text, when given, is
// only a sub-label after a '/', so no caller can pose as another key, as
// the admin or as the server's "api:<host>". The key's id, not its name:
// names are free UTF-8 and need not be unique, ids are neither.
// With auth off nobody is told apart, so a source is the caller's text,
// or fallback (e.g. "api:<host>") when there is none.
func attribute(ctx context.Context, fallback, given string) (string, error) {
	p := auth.FromContext(ctx)
	if p.KeyID == "" {
		if given == "" {
			return fallback, nil
		}
		return given, nil
	}
	base := "admin"
	if p.KeyID != "admin" {
		base = p.KeyTag()
	}
	if given == "" {
		return base, nil
	}
	if err := fenceview.ValidateSource(given); err != nil {
		return "", err
	}
	if max := fenceview.MaxSourceLen - len(base) - 1; len(given) > max {
		return "", fenceview.Errorf(fenceview.EINVALID, "source: at most %d bytes after this key's %q", max, base+"/")
	}
	return base + "/" + given, nil
}
