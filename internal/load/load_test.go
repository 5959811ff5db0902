package load

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckerRefusesTokensThatDoNotIncrease(t *testing.T) {
	c := NewChecker(2)
	for _, tok := range []int64{1, 2, 5, 9} {
		if !c.Observe(0, tok) {
			t.Fatalf("Observe(0, %d) refused an increasing token", tok)
		}
	}
	if !c.Observe(1, 3) {
		t.Fatal("resources are checked independently")
	}
	if c.Observe(0, 7) {
		t.Error("Observe(0, 7) after 9 accepted a decreasing token")
	}
	if c.Observe(0, 9) {
		t.Error("Observe(0, 9) after 9 accepted a repeated token")
	}
	v, n := c.Violations()
	if n != 2 || len(v) != 2 || !strings.Contains(v[0], "token 7 granted after 9") {
		t.Errorf("violations = %d %q", n, v)
	}
}

// fake is an in-memory backend whose faults are switched on by tests.
type fake struct {
	mu          sync.Mutex
	next        map[int]int64
	holder      map[int]string
	mark        map[int]int64
	backwards   bool  // grant tokens that decrease
	acceptAll   bool  // accept stale writes
	fail        error // of every fenced write
	failRelease error
}

func (f *fake) Name() string { return "fake" }
func (f *fake) Prepare(context.Context, Setup) error {
	f.next, f.holder, f.mark = map[int]int64{}, map[int]string{}, map[int]int64{}
	return nil
}
func (f *fake) NewClient(id int, holder string) (Client, error) { return &fakeClient{f, holder}, nil }
func (f *fake) Close() error                                    { return nil }

type fakeClient struct {
	f      *fake
	holder string
}

func (c *fakeClient) Acquire(_ context.Context, r int) (int64, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holder[r] != "" {
		return 0, ErrBusy
	}
	f.holder[r] = c.holder
	f.next[r]++
	if f.backwards && f.next[r] > 2 {
		return 1000 - f.next[r], nil
	}
	return f.next[r], nil
}

func (c *fakeClient) Release(_ context.Context, r int) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.f.failRelease != nil {
		return c.f.failRelease
	}
	c.f.holder[r] = ""
	return nil
}

func (c *fakeClient) Fence(_ context.Context, r int, tok int64) (bool, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return false, f.fail
	}
	if tok < f.mark[r] && !f.acceptAll {
		return false, nil
	}
	f.mark[r] = max(f.mark[r], tok)
	return true, nil
}

func runFake(t *testing.T, f *fake, mix Mix) *Report {
	t.Helper()
	rep, err := Run(context.Background(), Config{Clients: 3, Resources: 4, Duration: 50 * time.Millisecond, Mix: mix, Prefix: "t"}, f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRunPassesACorrectBackend(t *testing.T) {
	rep := runFake(t, &fake{}, Mix{Grant: 1, Fence: 1, Stale: 1})
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.Ops["cycle"].Count == 0 || rep.Ops["stale"].Count == 0 || rep.TokensChecked == 0 {
		t.Errorf("report = %+v", rep)
	}
}

func TestRunFailsOnDecreasingTokens(t *testing.T) {
	rep := runFake(t, &fake{backwards: true}, Mix{Grant: 1})
	if rep.OK || rep.Err() == nil || !strings.Contains(rep.Violations[0], "granted after") {
		t.Errorf("report ok=%v violations=%v", rep.OK, rep.Violations)
	}
}

func TestRunFailsWhenStaleWritesAreAccepted(t *testing.T) {
	rep := runFake(t, &fake{acceptAll: true}, Mix{Stale: 1})
	if rep.OK || len(rep.Violations) == 0 || !strings.Contains(rep.Violations[0], "stale token") {
		t.Errorf("report ok=%v violations=%v", rep.OK, rep.Violations)
	}
}

func TestRunFailsOn5xx(t *testing.T) {
	f := &fake{fail: &StatusError{Op: "fence", Code: 503, Body: "unavailable"}}
	if _, err := Run(context.Background(), Config{Clients: 2, Resources: 2, Duration: 50 * time.Millisecond, Mix: Mix{Fence: 1}, Prefix: "t"}, f); err == nil {
		t.Error("setup through a failing backend succeeded")
	}
	f = &fake{failRelease: &StatusError{Op: "release", Code: 500, Body: "oops"}}
	rep := runFake(t, f, Mix{Grant: 1})
	if rep.OK || rep.Status5xx == 0 || rep.Errors == 0 || !strings.Contains(rep.Err().Error(), "5xx") {
		t.Errorf("report ok=%v 5xx=%d errors=%d", rep.OK, rep.Status5xx, rep.Errors)
	}
}

func TestParseMix(t *testing.T) {
	for in, want := range map[string]Mix{
		"grant":              {Grant: 1},
		"fence":              {Fence: 1},
		"mixed":              {Grant: 45, Fence: 45, Stale: 10},
		"grant=3,stale=1":    {Grant: 3, Stale: 1},
		" fence=2 , grant=0": {Fence: 2},
	} {
		got, err := ParseMix(in)
		if err != nil || got != want {
			t.Errorf("ParseMix(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "grant=0", "x=1", "grant=-1", "grant" + "=1,"} {
		if _, err := ParseMix(in); err == nil {
			t.Errorf("ParseMix(%q) succeeded", in)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(c.q)
		if d := float64(got-c.want) / float64(c.want); d < -0.02 || d > 0.02 {
			t.Errorf("quantile(%v) = %v, want %v within 2%%", c.q, got, c.want)
		}
	}
	if h.max != int64(100*time.Millisecond) {
		t.Errorf("max = %v", time.Duration(h.max))
	}
	for v := int64(0); v < 1<<20; v = v*2 + 1 {
		if u := upperOf(bucketOf(v)); u < v {
			t.Errorf("upperOf(bucketOf(%d)) = %d", v, u)
		}
	}
}

type countingCloser struct{ closed int }

func (c *countingCloser) Close() error { c.closed++; return nil }

// A driver closed before any Prepare opened its connection closes
// cleanly; one that was opened is closed once.
func TestCloseOpened(t *testing.T) {
	g, err := NewGoClient("http://127.0.0.1:1", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("never prepared: %v", err)
	}
	if err := CloseOpened[*countingCloser](nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	c := &countingCloser{}
	if err := CloseOpened(c); err != nil || c.closed != 1 {
		t.Errorf("opened: %v, closed %d times", err, c.closed)
	}
}
