package request_test

import (
	"net/url"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

// fuzzQuery fuzzes parse with URL queries from seeds on: every query url
// can read either fails as EINVALID or is handed to check.
func fuzzQuery[T any](f *testing.F, seeds []string, parse func(map[string][]string) (T, error), check func(t *testing.T, raw string, v T)) {
	for _, q := range seeds {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		v, err := parse(q)
		if err != nil {
			if fenceview.ErrorCode(err) != fenceview.EINVALID {
				t.Fatalf("%q: error code %s: %v", raw, fenceview.ErrorCode(err), err)
			}
			return
		}
		check(t, raw, v)
	})
}

// Any query either fails as EINVALID or names a page within bounds whose
// cursor travels back to the same id.
func FuzzResourcePage(f *testing.F) {
	seeds := []string{"", "limit=5", "limit=1001", "prefix=job/&cursor=am9iLzE5OA", "cursor=AA", "cursor=!!", "limit=+5", "prefix=%00"}
	fuzzQuery(f, seeds, request.ParseResourceList, func(t *testing.T, raw string, p request.ResourceList) {
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
	seeds := []string{
		"resource=r&reason=stale-token&source=p&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z&limit=5&cursor=1758700000000-9",
		"limit=0", "cursor=-1&since=yesterday", "resource=%FF",
	}
	fuzzQuery(f, seeds, request.RejectionFilter, func(t *testing.T, raw string, filter fenceview.RejectionFilter) {
		if filter.Limit < 1 || filter.Limit > 1000 || filter.Before.Seq < 0 {
			t.Fatalf("%q: filter out of bounds: %+v", raw, filter)
		}
	})
}
