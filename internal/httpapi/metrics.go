package httpapi

import (
	"net/http"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// handleMetrics serves Prometheus metrics through s.Metrics; without one
// (an API built for a test) there is nothing to scrape.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	// The metrics count every resource, as /status does: a key limited to
	// some prefixes may not read them.
	if !auth.FromContext(r.Context()).Unrestricted() {
		s.writeError(w, r, fenceview.Errorf(fenceview.EFORBIDDEN, "the metrics count every resource; this key sees only some of them"))
		return
	}
	if s.Metrics == nil {
		s.writeError(w, r, fenceview.Errorf(fenceview.ENOTFOUND, "metrics are not configured"))
		return
	}
	s.Metrics.ServeHTTP(w, r)
}
