package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// Frames the event stream writes itself, past gorilla's writer, arrive
// through a real gorilla client as the messages they carry, at every
// length encoding (7-bit, 16-bit, 64-bit) and its edges.
func TestTextFramesReadByGorilla(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 127, 65535, 65536, 70000}
	payload := func(n int) []byte { return bytes.Repeat([]byte{'a' + byte(n%26)}, n) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj := &batchingHijacker{ResponseWriter: w}
		conn, err := upgrader.Upgrade(hj, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range sizes {
			hj.conn.Write(textFrame(payload(n)))
		}
		hj.conn.Flush()
		conn.ReadMessage() // until the client leaves
	}))
	defer srv.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range sizes {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message of %d bytes: %v", n, err)
		}
		if typ != websocket.TextMessage || !bytes.Equal(msg, payload(n)) {
			t.Fatalf("message of %d bytes: type %d, %d bytes", n, typ, len(msg))
		}
	}
}
