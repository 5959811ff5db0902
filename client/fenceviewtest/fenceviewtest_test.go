package fenceviewtest_test

import (
	"context"
	"errors"
	"time"

	"net/http"
	"testing"

	"github.com/fenceview/fenceview/client"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/clock"
)

// New serves for the test that asked and stops when that test ends.
func TestNewClosesWithItsTest(t *testing.T) {
	var url string
	t.Run("inner", func(t *testing.T) {
		srv := fenceviewtest.New(t, fenceviewtest.Config{FakeClock: true})
		url = srv.URL
		if !srv.Clock().Now().Equal(clock.TestDate) {
			t.Fatalf("fake clock starts at %v, want %v", srv.Clock().Now(), clock.TestDate)
		}
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
	http.DefaultClient.CloseIdleConnections()
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("the server still answers after its test ended")
	}
}

// Client's client reaches the server and closes with the test that made
// it. (That it shares the fake clock, the client package's watchdog tests
// rely on: they advance only the server's clock.)
func TestClientClosesWithItsTest(t *testing.T) {
	srv := fenceviewtest.New(t, fenceviewtest.Config{FakeClock: true})
	ctx := context.Background()
	var c *client.Client
	t.Run("inner", func(t *testing.T) {
		c = srv.Client(t)
		if tok, err := c.Mutex("r", "a").TryLock(ctx, 0, time.Minute); err != nil || tok != 1 {
			t.Fatalf("TryLock = %d, %v; want token 1", tok, err)
		}
	})
	if _, err := c.Mutex("r", "b").TryLock(ctx, 0, time.Minute); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("a call after the test ended: %v, want ErrClosed", err)
	}
}
