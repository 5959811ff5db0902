package httpapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

const (
	streamBuffer   = 1024 // commits a client may fall behind before it is dropped
	writeWait      = 10 * time.Second
	pongWait       = 60 * time.Second
	pingPeriod     = pongWait * 9 / 10
	maxClientFrame = 512 // clients have nothing to say; pongs and closes only
	replayPage     = 500
	// streamHold is the least time between two bursts to one watcher. On a
	// busy server the commits of those milliseconds then share one write
	// and one wake-up per watcher instead of one each; a quiet stream's
	// event still goes out at once. 20 ms is below what a person watching
	// can see, and halves the fan-out's CPU against 5 ms at 64 clients.
	streamHold = 20 * time.Millisecond
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 4096,
	// CheckOrigin left nil: gorilla's default accepts requests without an
	// Origin (non-browser clients) and same-origin browsers, refusing others.
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		code := fenceview.EINVALID
		switch status {
		case http.StatusForbidden:
			code = fenceview.EFORBIDDEN
		case http.StatusMethodNotAllowed:
			code = fenceview.EMETHODNOTALLOWED
		}
		WriteError(w, fenceview.Errorf(code, "websocket: %v", reason))
	},
}

// acceptWebsocket refuses a request that is not a websocket upgrade and
// takes a place in the server's websocket budget; release gives it back.
func (s *Server) acceptWebsocket(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if !websocket.IsWebSocketUpgrade(r) {
		s.writeError(w, r, fenceview.Errorf(fenceview.EINVALID, "this route speaks websocket only"))
		return nil, false
	}
	return s.openWebsocket(w, r)
}

// track takes an upgrade's result: unless it failed (the upgrader has
// answered) or the server is closing its websockets, conn counts among
// them (CloseWebsockets closes it), and untrack forgets and closes it.
func (s *Server) track(conn *websocket.Conn, upgradeErr error) (untrack func(), ok bool) {
	if upgradeErr != nil {
		return nil, false
	}
	if !s.hold(conn) {
		conn.Close()
		return nil, false
	}
	return func() {
		s.drop(conn)
		conn.Close()
	}, true
}

// handleEvents streams committed events over a websocket, one JSON object
// per message. With ?since=<seq> the stored events after seq come first.
// As in gorilla's chat example, the handler only parses, subscribes and
// upgrades; the stream's replay, read pump and write pump do the rest.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	resource, since, err := parseEventsQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	release, ok := s.acceptWebsocket(w, r)
	if !ok {
		return
	}
	defer release()
	// Subscribe before the handshake completes, so every event committed
	// after it is delivered.
	sub := s.Service.Subscribe(resource, streamBuffer)
	defer s.Service.Unsubscribe(sub)
	conn, out, err := upgradeBatched(w, r)
	untrack, ok := s.track(conn, err)
	if !ok {
		return
	}
	defer untrack()
	st := &eventStream{
		conn: conn, out: out, sub: sub, p: auth.FromContext(r.Context()),
		resource: resource, last: since, lag: s.StreamLag, frames: &s.frames,
	}

	gone := make(chan struct{})
	go st.readPump(gone)
	if since >= 0 && since < sub.Start() {
		if err := st.replay(r.Context(), s.History); err != nil {
			if errors.Is(err, errStreamRevoked) {
				closeRevoked(conn, out)
				return
			}
			if !errors.Is(err, errStreamWrite) {
				s.Logger.Error("stream replay", "err", err)
			}
			return
		}
	}
	st.writePump(gone)
}

// parseEventsQuery reads ?resource= (which the caller's key must see) and
// ?since= (-1 when absent: no replay).
func parseEventsQuery(r *http.Request) (resource string, since int64, err error) {
	q := r.URL.Query()
	resource = q.Get("resource")
	if resource != "" {
		if err := guard.ValidateResourceID(resource); err != nil {
			return "", 0, fenceview.FieldErrorf(fenceview.EINVALID, "resource", "resource: %v", err)
		}
		if err := seeResource(r.Context(), resource); err != nil {
			return "", 0, err
		}
	}
	if since, err = request.Since(q); err != nil {
		return "", 0, err
	}
	return resource, since, nil
}

// eventStream is one watcher's websocket. The read pump uses only conn's
// read side and out (which has a lock); the rest belongs to the one writer,
// replay and then writePump.
type eventStream struct {
	conn     *websocket.Conn
	out      *batchedConn // frames collect here until Flush
	sub      fenceview.Subscription
	p        *auth.Principal
	resource string
	frames   *frameCache
	last     int64               // the newest seq sent or passed over
	lag      func(time.Duration) // told each burst's wait; nil when no one listens
}

// errStreamWrite is a failed write to the watcher: it has gone, nothing to
// log.
var errStreamWrite = errors.New("stream write failed")

// errStreamRevoked ends a replay whose key was revoked or session ended.
var errStreamRevoked = errors.New("credential revoked")

// readPump is the one reader: it keeps deadlines fresh and closes gone when
// the client leaves.
func (st *eventStream) readPump(gone chan<- struct{}) {
	defer close(gone)
	conn := st.conn
	conn.SetReadLimit(maxClientFrame)
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	conn.SetPingHandler(func(data string) error {
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		st.out.Flush()
		return err
	})
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}

// write queues one text frame, made by textFrame, in out's buffer. The
// write deadline is set once per burst (deadline), not per frame: setting
// it costs more than copying the frame.
func (st *eventStream) write(frame []byte) error {
	_, err := st.out.Write(frame)
	return err
}

// deadline bounds the socket writes of the next burst.
func (st *eventStream) deadline() {
	st.out.SetWriteDeadline(time.Now().Add(writeWait))
}

// replay sends, a page at a time, the stored events after st.last up to
// the subscription's start; the rest arrives live. It stops at the first
// event after the caller's key is revoked or its session ends.
func (st *eventStream) replay(ctx context.Context, h fenceview.HistoryService) error {
	for done := false; !done; {
		if st.p.Gone() {
			return errStreamRevoked
		}
		page, err := h.EventsAfter(ctx, st.last, st.resource, replayPage)
		if err != nil {
			return err
		}
		done = len(page) < replayPage
		st.deadline()
		for _, e := range page {
			if e.Seq > st.sub.Start() {
				done = true // the rest arrives live
				break
			}
			if st.p.Gone() {
				return errStreamRevoked
			}
			st.last = e.Seq
			if !st.p.Sees(e.ResourceID) {
				continue
			}
			if err := st.write(eventFrame(e)); err != nil {
				return errStreamWrite
			}
		}
		if err := st.out.Flush(); err != nil {
			return errStreamWrite
		}
	}
	return nil
}

// writePump is the one writer. Frames collect in out's buffer and go to
// the socket together, one write per burst of events rather than one per
// event, and after a burst the next waits streamHold: with many watchers,
// that is what keeps fan-out cheap. It returns when the client leaves,
// falls behind, or its key is revoked.
func (st *eventStream) writePump(gone <-chan struct{}) {
	conn, out, sub := st.conn, st.out, st.sub
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	hold := time.NewTimer(streamHold)
	defer hold.Stop()
	var holding <-chan time.Time // after a burst: only the end of the hold, or of the stream, is heard
	for {
		events, lost, pings := sub.Events(), sub.Lost(), ping.C
		if holding != nil {
			events, lost, pings = nil, nil, nil
		}
		select {
		case <-holding:
			holding = nil
		case batch := <-events:
			if st.p.Gone() { // revoked while a burst was on its way
				closeRevoked(conn, out)
				return
			}
			oldest := time.Time{}
			if len(batch) > 0 {
				oldest = batch[0].PublishedAt
			}
			st.deadline()
			for more := true; more; {
				for _, e := range batch {
					if e.Seq <= st.last || !st.p.Sees(e.ResourceID) {
						continue
					}
					if err := st.write(st.frames.of(e)); err != nil {
						return
					}
					st.last = e.Seq
				}
				sub.Release(batch) // copied into out's buffer: no longer held
				select {
				case batch = <-sub.Events():
				default:
					more = false
				}
			}
			if !oldest.IsZero() && st.lag != nil {
				st.lag(time.Since(oldest)) // the burst is framed; Flush sends it
			}
			if err := out.Flush(); err != nil {
				return
			}
			hold.Reset(streamHold)
			holding = hold.C
		case <-lost:
			out.Flush()
			conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "fell behind; reconnect with ?since=<last seq>"),
				time.Now().Add(writeWait))
			out.Flush()
			return
		case <-pings:
			err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait))
			if err != nil || out.Flush() != nil {
				return
			}
		case <-gone:
			return
		case <-st.p.Revoked():
			closeRevoked(conn, out)
			return
		case <-st.p.Ended():
			closeRevoked(conn, out)
			return
		}
	}
}

// closeRevoked ends a stream whose key was revoked or session ended,
// saying why.
func closeRevoked(conn *websocket.Conn, out interface{ Flush() error }) {
	conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.ClosePolicyViolation, errKeyGone.Message), time.Now().Add(writeWait))
	if out != nil {
		out.Flush()
	}
}

func encodeEvent(e fenceview.Event) []byte {
	b, _ := json.Marshal(EventWire(e)) // plain data: cannot fail
	return b
}

// frameCache keeps the frames of the latest events, so an event is framed
// once for all its watchers and each copies the same bytes. A slot holds
// one published event's frame (the same *Published reaches every
// watcher), found by its sequence number; two watchers that meet an event
// at once may both frame it (the same bytes), and a watcher further
// behind than the cache frames its own.
type frameCache [1024]atomic.Pointer[publishedFrame]

type publishedFrame struct {
	event *fenceview.Published
	frame []byte
}

// of is e's frame.
func (c *frameCache) of(e *fenceview.Published) []byte {
	slot := &c[uint64(e.Seq)%uint64(len(c))]
	if f := slot.Load(); f != nil && f.event == e {
		return f.frame
	}
	frame := eventFrame(e.Event)
	slot.Store(&publishedFrame{e, frame})
	return frame
}

// eventFrame is e as a whole websocket message: one unmasked text frame
// (RFC 6455 section 5.2), as a server sends it.
func eventFrame(e fenceview.Event) []byte {
	return textFrame(encodeEvent(e))
}

func textFrame(payload []byte) []byte {
	const fin, opText = 0x80, 0x1
	n := len(payload)
	f := make([]byte, 0, n+10)
	f = append(f, fin|opText)
	switch {
	case n < 126:
		f = append(f, byte(n))
	case n <= 0xffff:
		f = append(f, 126, byte(n>>8), byte(n))
	default:
		f = binary.BigEndian.AppendUint64(append(f, 127), uint64(n))
	}
	return append(f, payload...)
}

// upgradeBatched completes the websocket handshake on a connection that
// buffers writes until Flush, the event stream writing its own frames on
// it; the handshake, or the refusal, is flushed here.
func upgradeBatched(w http.ResponseWriter, r *http.Request) (*websocket.Conn, *batchedConn, error) {
	hj := &batchingHijacker{ResponseWriter: w}
	conn, err := upgrader.Upgrade(hj, r, nil)
	if hj.conn != nil {
		hj.conn.Flush()
	}
	return conn, hj.conn, err
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
