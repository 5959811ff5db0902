package fenceviewtest_test

import (
	"net/http"
	"testing"

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
