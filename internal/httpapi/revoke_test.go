package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/issuer"
	"github.com/fenceview/fenceview/internal/sqlite"
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
	keys := withKeyring(t, s, s.History.(auth.Store), "admin")
	id, viewer := newKey(t, keys, "watcher", auth.Viewer)
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

// waitersAPI is a real server (issuer, SQLite, keyring with the admin
// token "admin-token") on 127.0.0.1 whose issuer says on queued each time
// a request joins a queue to wait.
func waitersAPI(t *testing.T) (*Server, *httptest.Server, *issuer.Service, *auth.Keyring, <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "waiters.db"))
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{}, 64)
	svc := issuer.New(db, nil, 0, issuer.Config{Issuer: "waiters", Queued: func(string, string) { queued <- struct{}{} }})
	t.Cleanup(func() { svc.Close(); db.Close() })
	s := New(svc, db, nil)
	keys := withKeyring(t, s, db, "admin-token")
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv, svc, keys, queued
}

// heldGrant holds the answer of the acquire of holder "waiter" between
// the service and the stream: granted says the service answered, and the
// answer goes on once proceed is closed.
type heldGrant struct {
	fenceview.Services
	granted, proceed chan struct{}
}

func (h *heldGrant) Acquire(ctx context.Context, req fenceview.AcquireRequest) (fenceview.Grant, error) {
	g, err := h.Services.Acquire(ctx, req)
	if req.Holder == "waiter" {
		close(h.granted)
		<-h.proceed
	}
	return g, err
}

// A waiter granted as its key was revoked, its answer still on its way to
// the connection's writer when the writer took the revocation: the
// connection was closed there and then, the grant committed and never
// sent. The grant is now sent, and then the close.
func TestRevokedRPCWaiterHearsOfItsGrant(t *testing.T) {
	s, srv, svc, keys, queued := waitersAPI(t)
	held := &heldGrant{Services: svc, granted: make(chan struct{}), proceed: make(chan struct{})}
	s.Service = held
	ending := make(chan struct{})
	s.rpcEnding = func() { close(ending) }
	key, secret := newKey(t, keys, "waiting", auth.Client)
	if status, a := call(t, srv, "POST", "/v1/locks/g/acquire", "admin-token", `{"holder":"owner","leaseMs":600000}`); status != 200 {
		t.Fatalf("the holder's acquire: %d %v", status, a)
	}
	ws := dialRPC(t, srv.URL, secret)
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"op":"acquire","resource":"g","holder":"waiter","leaseMs":600000,"waitMs":300000}`)); err != nil {
		t.Fatal(err)
	}
	<-queued
	if status, a := call(t, srv, "POST", "/v1/locks/g/release", "admin-token", `{"holder":"owner"}`); status != 200 {
		t.Fatalf("the holder's release: %d %v", status, a)
	}
	<-held.granted
	revoked := make(chan int, 1)
	go func() {
		status, _ := call(t, srv, "DELETE", "/v1/auth/keys/"+key.ID, "admin-token", "")
		revoked <- status
	}()
	<-ending // the writer has taken the revocation
	close(held.proceed)
	got, code := readToClose(t, ws)
	if a := got[1]; a.Status != 200 || code != websocket.ClosePolicyViolation {
		t.Fatalf("the waiter: %d %s, then close %d; want its grant, then 1008", a.Status, a.Body, code)
	}
	if status := <-revoked; status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	if ls, _ := svc.Lock("g"); ls.Holder != "waiter" {
		t.Fatalf("the lock: %+v, want held by the waiter told of it", ls)
	}
}

// A primitive whose waiters race a revocation (TestRevokedRPCWaitersAllHearBack):
// its holder takes and gives it back over the JSON API (the admin's),
// its waiters ask over the RPC stream, and a grant holds locks.
type raceablePrimitive struct {
	name    string
	take    func(round int) (path, body string)
	giveUp  func(round int) (path, body string)
	wait    func(round int, id uint64, holder string) string // an RPC request line
	lockIDs func(round int) []string                         // what a grant holds
}

var raceablePrimitives = []raceablePrimitive{
	{
		name: "lock",
		take: func(n int) (string, string) {
			return fmt.Sprintf("/v1/locks/l%d/acquire", n), `{"holder":"owner","leaseMs":600000}`
		},
		giveUp: func(n int) (string, string) { return fmt.Sprintf("/v1/locks/l%d/release", n), `{"holder":"owner"}` },
		wait: func(n int, id uint64, h string) string {
			return fmt.Sprintf(`{"id":%d,"op":"acquire","resource":"l%d","holder":%q,"leaseMs":600000,"waitMs":300000}`, id, n, h)
		},
		lockIDs: func(n int) []string { return []string{fmt.Sprintf("l%d", n)} },
	},
	{
		name: "semaphore",
		take: func(n int) (string, string) {
			return fmt.Sprintf("/v1/semaphores/s%d/acquire", n), `{"holder":"owner","permits":1,"leaseMs":600000}`
		},
		giveUp: func(n int) (string, string) {
			return fmt.Sprintf("/v1/semaphores/s%d/release", n), `{"holder":"owner","slot":0}`
		},
		wait: func(n int, id uint64, h string) string {
			return fmt.Sprintf(`{"id":%d,"op":"semaphore-acquire","name":"s%d","holder":%q,"permits":1,"leaseMs":600000,"waitMs":300000}`, id, n, h)
		},
		lockIDs: func(n int) []string { return []string{fenceview.SlotID(fmt.Sprintf("s%d", n), 0)} },
	},
	{
		name: "multi-lock",
		take: func(n int) (string, string) {
			return "/v1/locks/acquire-all", fmt.Sprintf(`{"resources":["ma%d","mb%d"],"holder":"owner","leaseMs":600000}`, n, n)
		},
		giveUp: func(n int) (string, string) {
			return "/v1/locks/release-all", fmt.Sprintf(`{"resources":["ma%d","mb%d"],"holder":"owner"}`, n, n)
		},
		wait: func(n int, id uint64, h string) string {
			return fmt.Sprintf(`{"id":%d,"op":"acquire-all","resources":["ma%d","mb%d"],"holder":%q,"leaseMs":600000,"waitMs":300000}`, id, n, n, h)
		},
		lockIDs: func(n int) []string { return []string{fmt.Sprintf("ma%d", n), fmt.Sprintf("mb%d", n)} },
	},
	{
		name: "election",
		take: func(n int) (string, string) {
			return fmt.Sprintf("/v1/elections/e%d/campaign", n), `{"candidate":"owner","leaseMs":600000}`
		},
		giveUp: func(n int) (string, string) {
			return fmt.Sprintf("/v1/elections/e%d/resign", n), `{"candidate":"owner"}`
		},
		wait: func(n int, id uint64, h string) string {
			return fmt.Sprintf(`{"id":%d,"op":"campaign","name":"e%d","candidate":%q,"leaseMs":600000,"waitMs":300000}`, id, n, h)
		},
		lockIDs: func(n int) []string { return []string{fmt.Sprintf("e%d", n)} },
	},
}

// answerLine is one answer line of the RPC stream.
type answerLine struct {
	ID     uint64
	Status int
	Body   json.RawMessage
}

// readToClose reads ws until the server closes it: the answers by id
// (each id once) and the close code.
func readToClose(t *testing.T, ws *websocket.Conn) (map[uint64]answerLine, int) {
	t.Helper()
	got := map[uint64]answerLine{}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("after %d answers the connection ended without a close frame: %v", len(got), err)
			}
			return got, ce.Code
		}
		for _, line := range strings.Split(string(data), "\n") {
			var a answerLine
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("answer line %q: %v", line, err)
			}
			if _, dup := got[a.ID]; dup {
				t.Fatalf("request %d answered twice", a.ID)
			}
			got[a.ID] = a
		}
	}
}

// answerStatuses is each answer's status, by id.
func answerStatuses(got map[uint64]answerLine) map[uint64]int {
	out := map[uint64]int{}
	for id, a := range got {
		out[id] = a.Status
	}
	return out
}

// A key revoked while its RPC waiters queued for a lock, a semaphore's
// permit, a multi-lock or an election, with the holder letting go about
// then: waiters granted before the revoke answered got their grants
// committed, but the connection was closed (1008) at once, so the grant
// lines never left (the lock stayed held by a holder never told, until
// its lease ran out) and the other waiters got no 401 either, only the
// close. Every request the connection took is now answered, its grant or
// 401 unauthenticated, before the close; and whatever the server says a
// waiter holds, that waiter was told.
func TestRevokedRPCWaitersAllHearBack(t *testing.T) {
	const rounds, waiters = 20, 3
	_, srv, svc, keys, queued := waitersAPI(t)
	ctx := context.Background()
	orders := []struct {
		name string
		race func(t *testing.T, release, revoke func())
	}{
		{"release-then-revoke", func(t *testing.T, release, revoke func()) { release(); revoke() }},
		{"revoke-then-release", func(t *testing.T, release, revoke func()) { revoke(); release() }},
		{"together", func(t *testing.T, release, revoke func()) {
			done := make(chan struct{})
			go func() { defer close(done); release() }()
			revoke()
			<-done
		}},
	}
	round := 0
	for _, p := range raceablePrimitives {
		for _, order := range orders {
			t.Run(p.name+"/"+order.name, func(t *testing.T) {
				for range rounds {
					round++
					key, secret, err := keys.Create(ctx, fmt.Sprintf("waiter-%d", round), auth.Client, nil)
					if err != nil {
						t.Fatal(err)
					}
					path, body := p.take(round)
					if status, a := call(t, srv, "POST", path, "admin-token", body); status != 200 {
						t.Fatalf("the holder's %s: %d %v", path, status, a)
					}
					ws := dialRPC(t, srv.URL, secret)
					var lines []string
					holderOf := map[string]uint64{}
					for i := range uint64(waiters) {
						h := fmt.Sprintf("w%d", i+1)
						holderOf[h] = i + 1
						lines = append(lines, p.wait(round, i+1, h))
					}
					if err := ws.WriteMessage(websocket.TextMessage, []byte(strings.Join(lines, "\n"))); err != nil {
						t.Fatal(err)
					}
					for range waiters {
						<-queued
					}
					release := func() {
						path, body := p.giveUp(round)
						if status, a := call(t, srv, "POST", path, "admin-token", body); status != 200 {
							t.Errorf("the holder's %s: %d %v", path, status, a)
						}
					}
					revoke := func() {
						if status, a := call(t, srv, "DELETE", "/v1/auth/keys/"+key.ID, "admin-token", ""); status != 200 {
							t.Errorf("revoke: %d %v", status, a)
						}
					}
					order.race(t, release, revoke)
					got, code := readToClose(t, ws)
					ws.Close()
					if code != websocket.ClosePolicyViolation {
						t.Fatalf("round %d: closed with %d, want 1008", round, code)
					}
					granted := 0
					for id := range uint64(waiters) {
						a, ok := got[id+1]
						switch {
						case !ok:
							t.Fatalf("round %d: waiter %d had no answer before the close (answered: %v)", round, id+1, answerStatuses(got))
						case a.Status == 200:
							granted++
						case a.Status != 401 || !strings.Contains(string(a.Body), `"code":"unauthenticated"`):
							t.Fatalf("round %d: waiter %d answered %d %s, want its grant or 401 unauthenticated", round, id+1, a.Status, a.Body)
						}
					}
					for _, lockID := range p.lockIDs(round) {
						ls, err := svc.Lock(lockID)
						if err != nil {
							t.Fatal(err)
						}
						if id, ok := holderOf[ls.Holder]; ok && got[id].Status != 200 {
							t.Fatalf("round %d: %s is held by waiter %d, which was answered %d %s", round, lockID, id, got[id].Status, got[id].Body)
						}
					}
					switch {
					case granted > 1:
						t.Fatalf("round %d: %d waiters granted one holder's place", round, granted)
					case order.name == "release-then-revoke" && granted != 1:
						t.Fatalf("round %d: released before the revocation, yet no waiter was granted: %v", round, answerStatuses(got))
					case order.name == "revoke-then-release" && granted != 0:
						t.Fatalf("round %d: a waiter was granted after its key's revocation answered", round)
					}
				}
			})
		}
	}
}
