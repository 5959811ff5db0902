package issuer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fenceview/fenceview"
)

// A slow event reader used to pin up to 1,024 commits of any size (+230 MB
// in 14 s): the buffer counted batches, not what they held. It is bounded
// by bytes now: a subscriber that reads nothing holds at most MaxBacklog of
// events (one batch beyond it is never delivered), and is dropped, while
// one that reads and releases keeps every event.
func TestSlowSubscriberHoldsAtMostItsBacklog(t *testing.T) {
	h := newHarness(t)
	slow := h.Subscribe("", 1024).(*Subscription) // room for every commit below, by count
	reader := h.Subscribe("", 1024).(*Subscription)
	reason, source := strings.Repeat("r", fenceview.MaxReasonLen), strings.Repeat("s", fenceview.MaxSourceLen)
	const commits, perCommit = 40, 100
	var delivered int64 // bytes in slow's queue
	var received int
	for i := range commits {
		reports := make([]fenceview.Report, perCommit)
		for j := range reports {
			reports[j] = fenceview.Report{ResourceID: fmt.Sprintf("big-%03d-%03d", i, j), Token: 1, Reason: reason, Source: source}
		}
		if _, err := h.Report(ctx, reports); err != nil {
			t.Fatal(err)
		}
		for len(reader.Events()) > 0 {
			b := <-reader.Events()
			received += len(b)
			reader.Release(b)
		}
		for len(slow.Events()) > 0 {
			delivered += batchBytes(<-slow.Events()) // taken off the channel, never released
		}
		if slow.Backlog() != delivered || delivered > MaxBacklog {
			t.Fatalf("after commit %d: %d bytes delivered unread (backlog %d), bound %d", i, delivered, slow.Backlog(), MaxBacklog)
		}
	}
	select {
	case <-slow.Lost():
	default:
		t.Fatalf("a reader %d bytes behind was not dropped", delivered)
	}
	select {
	case <-reader.Lost():
		t.Fatal("the reader that releases was dropped")
	default:
	}
	if received != commits*perCommit || reader.Backlog() != 0 {
		t.Fatalf("the reader that releases got %d events (backlog %d), want %d", received, reader.Backlog(), commits*perCommit)
	}
}
