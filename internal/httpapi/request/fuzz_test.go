package request_test

import (
	"net/url"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/httpapi/request"
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
		p, err := request.ParseResourceList(q)
		if err != nil {
			if fenceview.ErrorCode(err) != fenceview.EINVALID {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if p.Limit < 1 || p.Limit > request.MaxPage {
			t.Fatalf("%q: limit %d", raw, p.Limit)
		}
		if p.Prefix != "" && guard.ValidateResourceID(p.Prefix) != nil {
			t.Fatalf("%q: prefix %q", raw, p.Prefix)
		}
		if p.After != "" {
			back, err := request.ParseResourceList(url.Values{"cursor": {request.ResourceCursor(p.After)}})
			if err != nil || back.After != p.After {
				t.Fatalf("%q: cursor of %q does not round-trip: %v", raw, p.After, err)
			}
		}
	})
}

// The rejection history's query parameters: a clean 400 or a filter within
// bounds, never a panic.
func FuzzRejectionFilter(f *testing.F) {
	f.Add("resource=r&reason=stale-token&source=p&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z&limit=5&cursor=1758700000000-9")
	f.Add("limit=0")
	f.Add("cursor=-1&since=yesterday")
	f.Add("resource=%FF")
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		filter, err := request.RejectionFilter(q)
		if err != nil {
			if fenceview.ErrorCode(err) != fenceview.EINVALID {
				t.Fatalf("%q: error code %s", query, fenceview.ErrorCode(err))
			}
			return
		}
		if filter.Limit < 1 || filter.Limit > 1000 || filter.Before.Seq < 0 {
			t.Fatalf("%q: filter out of bounds: %+v", query, filter)
		}
	})
}
