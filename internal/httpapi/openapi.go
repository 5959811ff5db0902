package httpapi

import (
	"net/http"

	"github.com/fenceview/fenceview/internal/api"
)

// handleOpenAPI serves the API's OpenAPI 3.1 description.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(api.JSON())
}
