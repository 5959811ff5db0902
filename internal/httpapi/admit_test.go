package httpapi

import "net/http"

// admit is the door of every route as a test meets it, without the mux in
// front: the route matched as the mux would, then authenticate and authorize. It
// returns the request to serve (carrying its principal), or false when it
// has answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if r.Pattern == "" {
		_, r.Pattern = s.mux.Handler(r)
	}
	o := rowOf(r.Pattern)
	p, ok := s.authenticate(w, r, o)
	if !ok || !s.authorized(w, r, o, p) {
		return r, false
	}
	return withPrincipal(r, p), true
}
