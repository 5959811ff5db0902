package httpapi

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/auth"
	"github.com/fenceview/fenceview/guard"
)

const (
	streamBuffer   = 1024 // commits a client may fall behind before it is dropped
	writeWait      = 10 * time.Second
	pongWait       = 60 * time.Second
	pingPeriod     = pongWait * 9 / 10
	maxClientFrame = 512 // clients have nothing to say; pongs and closes only
	replayPage     = 500
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 4096,
	// CheckOrigin left nil: gorilla's default accepts requests without an
	// Origin (non-browser clients) and same-origin browsers, refusing others.
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		writeJSON(w, status, map[string]any{"error": "websocket: " + reason.Error()})
	},
}

// handleEvents streams committed events over a websocket, one JSON object
// per message. With ?since=<seq> the stored events after seq come first.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	resource := q.Get("resource")
	if resource != "" {
		if err := guard.ValidateResourceID(resource); err != nil {
			s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID, "resource: %v", err))
			return
		}
		if err := seeResource(r.Context(), resource); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	p := auth.FromContext(r.Context())
	since := int64(-1)
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID, "since: a non-negative event sequence number"))
			return
		}
		since = n
	}
	if !websocket.IsWebSocketUpgrade(r) {
		s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID, "this route speaks websocket only"))
		return
	}

	// Subscribe before the handshake completes, so every event committed
	// after it is delivered.
	sub := s.Service.Subscribe(resource, streamBuffer)
	defer s.Service.Unsubscribe(sub)
	hj := &batchingHijacker{ResponseWriter: w}
	conn, err := upgrader.Upgrade(hj, r, nil)
	if hj.conn != nil {
		hj.conn.Flush() // the handshake, or the refusal
	}
	if err != nil {
		return // the upgrader has answered
	}
	defer conn.Close()
	out := hj.conn

	// The one reader: keeps deadlines fresh, notices the client leaving.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		conn.SetReadLimit(maxClientFrame)
		conn.SetReadDeadline(time.Now().Add(pongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
		conn.SetPingHandler(func(data string) error {
			err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
			out.Flush()
			return err
		})
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()

	// The one writer: this goroutine. Frames collect in out's buffer and go
	// to the socket together, one write per burst of events rather than one
	// per event: with many watchers, that is what keeps fan-out cheap.
	write := func(b []byte) error {
		conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(websocket.TextMessage, b)
	}
	last := since
	if since >= 0 && since < sub.Start {
		for done := false; !done; {
			page, err := s.History.EventsAfter(r.Context(), last, resource, replayPage)
			if err != nil {
				s.Logger.Error("stream replay", "err", err)
				return
			}
			done = len(page) < replayPage
			for _, e := range page {
				if e.Seq > sub.Start {
					done = true // the rest arrives live
					break
				}
				last = e.Seq
				if !p.Sees(e.ResourceID) {
					continue
				}
				if err := write(encodeEvent(e)); err != nil {
					return
				}
			}
			if err := out.Flush(); err != nil {
				return
			}
		}
	}
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	for {
		select {
		case batch := <-sub.Events():
			oldest := time.Time{}
			if len(batch) > 0 {
				oldest = batch[0].PublishedAt
			}
			for more := true; more; {
				for _, e := range batch {
					if e.Seq <= last || !p.Sees(e.ResourceID) {
						continue
					}
					if err := write(e.Encoded(encodeEvent)); err != nil {
						return
					}
					last = e.Seq
				}
				select {
				case batch = <-sub.Events():
				default:
					more = false
				}
			}
			if !oldest.IsZero() {
				s.observeLag(time.Since(oldest)) // the burst is framed; Flush sends it
			}
			if err := out.Flush(); err != nil {
				return
			}
		case <-sub.Lost():
			out.Flush()
			conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "fell behind; reconnect with ?since=<last seq>"),
				time.Now().Add(writeWait))
			out.Flush()
			return
		case <-ping.C:
			err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
			if err != nil || out.Flush() != nil {
				return
			}
		case <-gone:
			return
		case <-p.Revoked():
			closeRevoked(conn, out)
			return
		}
	}
}

// closeRevoked ends a stream whose key was revoked, saying why.
func closeRevoked(conn *websocket.Conn, out interface{ Flush() error }) {
	conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "key revoked"), time.Now().Add(writeWait))
	if out != nil {
		out.Flush()
	}
}

func encodeEvent(e fenceview.Event) []byte {
	b, _ := json.Marshal(EventWire(e)) // plain data: cannot fail
	return b
}

// batchingHijacker hands the websocket a connection that buffers writes
// until Flush.
type batchingHijacker struct {
	http.ResponseWriter
	conn *batchedConn
}

func (h *batchingHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchedConn{Conn: nc, w: bufio.NewWriterSize(nc, 32<<10)}
	return h.conn, rw, nil
}

// batchedConn buffers writes; the reader's pongs and the writer's frames
// may both write, so the buffer has a lock.
type batchedConn struct {
	net.Conn
	mu sync.Mutex
	w  *bufio.Writer
}

func (c *batchedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

// Flush sends what is buffered.
func (c *batchedConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Flush()
}
