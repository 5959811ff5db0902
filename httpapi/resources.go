package httpapi

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Paging of GET /v1/resources, like the rejection history's.
const (
	defaultResourcePage = 100
	maxResourcePage     = 1000
)

// ResourcePageQuery is a page of the resource list as asked for in a URL.
type ResourcePageQuery struct {
	Prefix string // only ids starting with it
	After  string // the last id of the previous page ("" for the first)
	Limit  int
}

// ParseResourcePage reads limit (1..1000, default 100), cursor and prefix.
func ParseResourcePage(q url.Values) (ResourcePageQuery, error) {
	p := ResourcePageQuery{Prefix: q.Get("prefix"), Limit: defaultResourcePage}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxResourcePage || v[0] == '+' {
			return p, fenceview.Errorf(fenceview.EINVALID, "limit: an integer from 1 to %d", maxResourcePage)
		}
		p.Limit = n
	}
	if p.Prefix != "" {
		if err := guard.ValidateResourceID(p.Prefix); err != nil {
			return p, fenceview.Errorf(fenceview.EINVALID, "prefix: %v", err)
		}
	}
	if v := q.Get("cursor"); v != "" {
		id, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || guard.ValidateResourceID(string(id)) != nil {
			return p, fenceview.Errorf(fenceview.EINVALID, "cursor: use the next value of the previous page")
		}
		p.After = string(id)
	}
	return p, nil
}

// ResourceCursor is the cursor of the page after the one ending at id.
func ResourceCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func (s *Server) handleResources(w http.ResponseWriter, r *http.Request) {
	q, err := ParseResourcePage(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, more := s.Service.ResourcePage(q.Prefix, q.After, q.Limit)
	out := make([]resourceBody, 0, len(page))
	for _, res := range page {
		out = append(out, resourceWire(res))
	}
	var next any
	if more {
		next = ResourceCursor(page[len(page)-1].ResourceID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": out, "next": next})
}
