package httpapi

import (
	"net/http"
	"time"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/fair"
)

// Pacing (package fair, Pacer): while the server is contended, a key
// busier than every other has its new requests held back to the busiest
// other key's rate (at least --overload-flow-rate), right after its
// credential is checked and before its body is read. A held request waits
// on its connection, so a client in a closed loop slows down instead of
// being answered, and coming back, thousands of times a second; one that
// would wait longer than --overload-max-wait, or beyond its key's
// --overload-queue, is answered 429 overloaded (held as any shed answer).
// Lease-keeping is counted, never held back. The RPC stream is not paced:
// its operations cost no HTTP request each, and its in-flight slots per
// key bound it.

// pacer is the admission control's pacer, made on first use.
func (o *Overload) pacer() *fair.Pacer {
	o.paceOnce.Do(func() {
		if o.Pacer == nil {
			o.Pacer = fair.NewPacer(o.Dispatcher)
		}
	})
	return o.Pacer
}

// paced holds r, by p, back as its key's pace says, and reports whether to
// serve it; when not, it has been answered (or its caller left).
func (s *Server) paced(w http.ResponseWriter, r *http.Request, op *operation, p *auth.Principal) bool {
	if !op.admitted() {
		return true
	}
	class := op.class
	o := s.overload()
	flow, fclass := flowOf(p, s.clientAddr(r))
	wait, done, shed := o.pacer().Take(flow, class.pri != fair.Lease)
	if shed != nil {
		o.observeShed(fclass, class.pri, shed.Reason)
		o.hold(r.Context(), shed.RetryAfter)
		s.writeError(w, r, overloaded(shed))
		return false
	}
	if wait <= 0 {
		return true
	}
	defer done()
	if o.ObservePace != nil {
		o.ObservePace(fclass, wait)
	}
	if o.sleep != nil {
		return o.sleep(r.Context(), wait) == nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
