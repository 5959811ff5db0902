package httpapi

import (
	"net/http"
)

// handleMetrics serves Prometheus metrics through s.Metrics; without one
// (an API built for a test) there is nothing to scrape.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.Metrics == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "metrics are not configured"})
		return
	}
	s.Metrics.ServeHTTP(w, r)
}
