package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
)

// A client given several nodes moves on from one it cannot reach, and
// starts there next time.
func TestClientMovesOnFromAnUnreachableNode(t *testing.T) {
	srv, err := fenceviewtest.Start(context.Background(), fenceviewtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// A port nothing listens on: taken, then given back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	c, err := client.New(client.Config{URL: dead, Peers: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		m := c.Mutex("r", "h")
		if _, err := m.TryLock(context.Background(), 0, time.Minute); err != nil {
			t.Fatalf("try %d: %v", i, err)
		}
		if err := m.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.New(client.Config{URL: dead, Peers: []string{"ftp://x"}}); err == nil {
		t.Fatal("a bad node URL was accepted")
	}
}
