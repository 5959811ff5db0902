package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview/internal/wire"
)

// A server whose service ended (a cluster leader's term) answers what the
// connection took and closes it with 1012 and wire.ServiceEnded: a call it
// left unanswered was not taken, and the client sends it once more on a
// new connection. A 1012 for another reason (a proxy restarting) says
// nothing of what was taken: the call is not sent again.
func TestCallLeftByAnEndedServiceIsSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		resent       bool
	}{{"service-ended", wire.ServiceEnded, true}, {"other-reason", "proxy restarting", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c, conns := answeringClient(t, func(conn *websocket.Conn, n int64, req rpcRequest) string {
				if n == 1 { // the request read, then the close, unanswered
					conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, tc.reason), time.Now().Add(10*time.Second))
					return ""
				}
				return fmt.Sprintf(`{"id":%d,"status":200,"body":{"accepted":true,"idempotencyKey":"r:%d","token":%d}}`, req.ID, req.Token, req.Token)
			})
			f, err := c.Fence(context.Background(), "r", 7)
			switch {
			case tc.resent && (err != nil || f.Token != 7 || conns.Load() != 2):
				t.Fatalf("Fence = %+v, %v over %d connections; want token 7 from the second", f, err, conns.Load())
			case !tc.resent && (err == nil || conns.Load() != 1):
				t.Fatalf("Fence = %+v, %v over %d connections; want the close's error, not sent again", f, err, conns.Load())
			}
		})
	}
}
