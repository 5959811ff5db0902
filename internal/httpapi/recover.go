package httpapi

import (
	"net/http"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

type recoverRequest struct {
	Token jsonInt `json:"token"`
}

// handleRecover sets a poisoned or exhausted resource's counter and mark
// back to a token the admin names (admin; see issuer.Service.Recover).
func (s *Server) handleRecover(w http.ResponseWriter, r *http.Request) {
	if err := s.requireAdmin(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	resource, err := pathResource(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req recoverRequest
	if err := decode(w, r, &req, request.MaxBody, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !req.Token.Set {
		s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID,
			`field "token" is required: the counter to start from, at least the highest token in use (the next grant takes token+1)`))
		return
	}
	res, err := s.Service.Recover(r.Context(), resource, req.Token.Value)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resourceId": resource, "recovered": true, "lastToken": res.LastToken, "highWaterMark": res.HighWaterMark,
		"nextToken": fenceview.NextToken(res),
	})
}
