package fenceview_test

import (
	"net/url"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Any query either fails as EINVALID or names a page within bounds whose
// cursor travels back to the same id.
func FuzzResourcePage(f *testing.F) {
	for _, q := range []string{"", "limit=5", "limit=1001", "prefix=job/&cursor=am9iLzE5OA", "cursor=AA", "cursor=!!", "limit=+5", "prefix=%00"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p, err := fenceview.ParseResourcePage(q)
		if err != nil {
			if fenceview.ErrorCode(err) != fenceview.EINVALID {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if p.Limit < 1 || p.Limit > fenceview.MaxPage {
			t.Fatalf("%q: limit %d", raw, p.Limit)
		}
		if p.Prefix != "" && guard.ValidateResourceID(p.Prefix) != nil {
			t.Fatalf("%q: prefix %q", raw, p.Prefix)
		}
		if p.After != "" {
			back, err := fenceview.ParseResourcePage(url.Values{"cursor": {fenceview.ResourceCursor(p.After)}})
			if err != nil || back.After != p.After {
				t.Fatalf("%q: cursor of %q does not round-trip: %v", raw, p.After, err)
			}
		}
	})
}
