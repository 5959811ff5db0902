package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
)

// gatedHistory hands out replay pages one at a time: each EventsAfter
// says it was asked, then waits to be let go.
type gatedHistory struct {
	fenceview.HistoryService
	asked, proceed chan struct{}
}

func (g *gatedHistory) EventsAfter(ctx context.Context, after int64, resourceID string, limit int) ([]fenceview.Event, error) {
	g.asked <- struct{}{}
	<-g.proceed
	return g.HistoryService.EventsAfter(ctx, after, resourceID, limit)
}

// A replaying /v1/events?since= never looked at revocation (916 events/s
// went on after it). Revoked between two pages, it stops before the first
// event of the next: the watcher gets the first page and close 1008.
func TestRevocationStopsReplay(t *testing.T) {
	s := newTestAPI(t)
	ctx := context.Background()
	keys, err := auth.NewKeyring(ctx, s.History.(auth.Store), "admin", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Auth = keys
	id, viewer, err := keys.Create(ctx, "watcher", auth.Viewer, nil)
	if err != nil {
		t.Fatal(err)
	}
	reports := make([]fenceview.Report, 3*replayPage)
	for i := range reports {
		reports[i] = fenceview.Report{ResourceID: fmt.Sprintf("h-%04d", i), Token: 1, Accepted: true, Source: "test"}
	}
	if _, err := s.Service.Report(ctx, reports); err != nil {
		t.Fatal(err)
	}
	gate := &gatedHistory{HistoryService: s.History, asked: make(chan struct{}, 8), proceed: make(chan struct{})}
	s.History = gate
	srv := httptest.NewServer(s)
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/events?since=0",
		http.Header{"Authorization": {"Bearer " + viewer}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	<-gate.asked
	gate.proceed <- struct{}{}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	for i := 0; i < replayPage; i++ {
		if _, _, err := ws.ReadMessage(); err != nil {
			t.Fatalf("event %d of the first page: %v", i, err)
		}
	}
	<-gate.asked // the second page is being fetched
	req, _ := http.NewRequest("DELETE", srv.URL+"/v1/auth/keys/"+id.ID, nil)
	req.Header.Set("Authorization", "Bearer admin")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", res, err)
	}
	res.Body.Close()
	close(gate.proceed)
	more := 0
	for {
		_, _, err := ws.ReadMessage()
		if err == nil {
			more++
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || more != 0 {
			t.Fatalf("after the revocation: %d more events, then %v (want none, then close 1008)", more, err)
		}
		return
	}
}
