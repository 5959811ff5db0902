package httpapi

import (
	"net/http"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
	"github.com/fenceview/fenceview/internal/wire"
)

func (s *Server) handleResources(w http.ResponseWriter, r *http.Request) (any, error) {
	q, err := request.ParseResourceList(r.URL.Query())
	if err != nil {
		return nil, err
	}
	p := auth.FromContext(r.Context())
	// The key's prefixes, so a key limited to some resources walks only
	// those; Sees still decides each id.
	page, more := s.Service.ListResources(q.Prefix, q.After, q.Limit, p.Scope())
	out := make([]wire.Resource, 0, len(page))
	for _, res := range page {
		out = append(out, resourceWire(res))
	}
	var next any
	if more {
		next = request.ResourceCursor(page[len(page)-1].ResourceID)
	}
	return map[string]any{"resources": out, "next": next}, nil
}
