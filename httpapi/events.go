package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

const (
	streamBuffer   = 1024 // events a client may fall behind before it is dropped
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
	}
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
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer conn.Close()

	// The one reader: keeps deadlines fresh, notices the client leaving.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		conn.SetReadLimit(maxClientFrame)
		conn.SetReadDeadline(time.Now().Add(pongWait))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()

	// The one writer: this goroutine.
	send := func(e fenceview.Event) error {
		b, err := json.Marshal(EventWire(e))
		if err != nil {
			return err
		}
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
				if err := send(e); err != nil {
					return
				}
				last = e.Seq
			}
		}
	}
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	for {
		select {
		case e := <-sub.Events():
			if e.Seq <= last {
				continue
			}
			if err := send(e); err != nil {
				return
			}
		case <-sub.Lost():
			conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "fell behind; reconnect with ?since=<last seq>"),
				time.Now().Add(writeWait))
			return
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				return
			}
		case <-gone:
			return
		}
	}
}
