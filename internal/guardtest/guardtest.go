// Package guardtest is the one table of cases every fenceview guard must
// pass, whatever keeps its marks (memory, SQLite, PostgreSQL, MariaDB,
// Redis): accept a higher token, accept an equal one (a holder's repeated
// writes), refuse a lower one with the required token, let exactly the
// highest of many concurrent writers win, and refuse bad input without
// changing anything. Guards run the same table so they cannot drift apart.
//
//	func TestCases(t *testing.T) {
//		guardtest.Run(t, func(t *testing.T) guardtest.Resource { return newRow(t) })
//	}
package guardtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// Resource is one fenced resource of the guard under test, as a test sees
// it: a value written under a token, and the value and mark read back.
type Resource interface {
	// Write stores value if token is at least the mark, recording token as
	// the new mark, in one atomic step.
	Write(ctx context.Context, token int64, value string) (guard.Decision, error)
	// Read returns the stored value ("" before any write) and the mark (0
	// before any accepted write).
	Read(ctx context.Context) (value string, mark int64, err error)
}

// BadCaller is a Resource with invalid calls of its own (a bad resource
// id, a bad column name, a reserved key). Each must return an error and
// change nothing.
type BadCaller interface {
	BadCalls() map[string]func(ctx context.Context) error
}

// Writers is the number of concurrent writers in the concurrency case.
const Writers = 24

// Run runs every case as a subtest, each on a fresh resource from
// newResource (no mark, no value).
func Run(t *testing.T, newResource func(t *testing.T) Resource) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(ctx, t, newResource(t)) })
	}
}

type testCase struct {
	name string
	run  func(ctx context.Context, t *testing.T, r Resource)
}

var cases = []testCase{
	{"accept higher", func(ctx context.Context, t *testing.T, r Resource) {
		mustAccept(ctx, t, r, 5, "five")
		mustAccept(ctx, t, r, 7, "seven")
		wantState(ctx, t, r, "seven", 7)
	}},
	{"accept equal", func(ctx context.Context, t *testing.T, r Resource) {
		// A holder writes several times under one grant, the same value
		// twice too: every write is accepted.
		mustAccept(ctx, t, r, 5, "first")
		mustAccept(ctx, t, r, 5, "second")
		mustAccept(ctx, t, r, 5, "second")
		wantState(ctx, t, r, "second", 5)
	}},
	{"refuse lower with the required token", func(ctx context.Context, t *testing.T, r Resource) {
		mustAccept(ctx, t, r, 42, "B")
		d, err := r.Write(ctx, 41, "A")
		RefusedStale(t, d, err, "r", 41, 42)
		wantState(ctx, t, r, "B", 42)
	}},
	{"large tokens compare exactly", func(ctx context.Context, t *testing.T, r Resource) {
		// Above 2^53 a float64 cannot tell neighbours apart: a guard that
		// compares in floating point (Lua numbers, JSON numbers) would
		// accept 2^53 after 2^53+1.
		const big = int64(1) << 53
		mustAccept(ctx, t, r, big+1, "big+1")
		d, err := r.Write(ctx, big, "big")
		if err != nil || d.Accepted || d.Required != big+1 {
			t.Fatalf("Write(2^53) after 2^53+1 = %+v, %v; want refused, required %d", d, err, big+1)
		}
		wantState(ctx, t, r, "big+1", big+1)
		mustAccept(ctx, t, r, math.MaxInt64, "max")
		d, err = r.Write(ctx, math.MaxInt64-1, "max-1")
		if err != nil || d.Accepted || d.Required != math.MaxInt64 {
			t.Fatalf("Write(max-1) after max = %+v, %v; want refused, required max", d, err)
		}
		mustAccept(ctx, t, r, math.MaxInt64, "max again")
		wantState(ctx, t, r, "max again", math.MaxInt64)
	}},
	{"concurrent writers: exactly the highest wins", func(ctx context.Context, t *testing.T, r Resource) {
		mustAccept(ctx, t, r, 1000, "start")
		// Writers with tokens 1001..1000+Writers start together; each
		// writes its own token as the value. Whatever the interleaving, the
		// highest token must be the last value and the mark; every refusal
		// must name a token above its own; a write below the starting mark
		// is refused too.
		type result struct {
			tok int64
			d   guard.Decision
			err error
		}
		results := make([]result, Writers+1)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range results {
			tok := int64(1000 + i + 1)
			if i == Writers {
				tok = 999 // below the mark from the start
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d, err := r.Write(ctx, tok, strconv.FormatInt(tok, 10))
				results[i] = result{tok, d, err}
			}()
		}
		close(start)
		wg.Wait()
		highest := int64(1000 + Writers)
		for _, res := range results {
			switch {
			case res.err != nil:
				t.Errorf("Write(%d) = %v", res.tok, res.err)
			case res.d.Presented != res.tok:
				t.Errorf("Write(%d) decision presents %d", res.tok, res.d.Presented)
			case res.tok == highest && !res.d.Accepted:
				t.Errorf("the highest token %d was refused: %+v", res.tok, res.d)
			case res.tok == 999 && res.d.Accepted:
				t.Errorf("token 999 below the mark 1000 was accepted")
			case !res.d.Accepted && (res.d.Required <= res.tok || res.d.Reason != guard.ReasonStale):
				t.Errorf("Write(%d) refused with %+v: required must be above the token", res.tok, res.d)
			}
		}
		wantState(ctx, t, r, strconv.FormatInt(highest, 10), highest)
		d, err := r.Write(ctx, highest-1, "late")
		if err != nil || d.Accepted || d.Required != highest {
			t.Fatalf("a late lower writer = %+v, %v; want refused, required %d", d, err, highest)
		}
	}},
	{"bad input changes nothing", func(ctx context.Context, t *testing.T, r Resource) {
		mustAccept(ctx, t, r, 9, "nine")
		for _, tok := range []int64{0, -1, math.MinInt64} {
			d, err := r.Write(ctx, tok, "bad")
			if !errors.Is(err, guard.ErrInvalidToken) {
				t.Errorf("Write(%d) = %+v, %v; want guard.ErrInvalidToken", tok, d, err)
			}
		}
		if bc, ok := r.(BadCaller); ok {
			for name, call := range bc.BadCalls() {
				if err := call(ctx); err == nil {
					t.Errorf("%s: no error", name)
				}
			}
		}
		wantState(ctx, t, r, "nine", 9)
	}},
}

// RefusedStale fails t unless a write's answer (d, err) is a refusal of a
// stale token, presented where required was needed, and not an error, and
// d.Err(resource) is a *guard.RefusalError with both tokens.
func RefusedStale(t *testing.T, d guard.Decision, err error, resource string, presented, required int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("the write under %d = %v; a refusal is a decision, not an error", presented, err)
	}
	want := guard.Decision{Accepted: false, Reason: guard.ReasonStale, Presented: presented, Required: required}
	if d != want {
		t.Fatalf("the write under %d = %+v, want %+v", presented, d, want)
	}
	var se *guard.RefusalError
	if err := d.Err(resource); !errors.As(err, &se) || se.Required != required || se.Presented != presented {
		t.Fatalf("d.Err = %v, want a *guard.RefusalError requiring %d", err, required)
	}
}

func mustAccept(ctx context.Context, t *testing.T, r Resource, token int64, value string) {
	t.Helper()
	d, err := r.Write(ctx, token, value)
	if err != nil {
		t.Fatalf("Write(%d, %q) = %v", token, value, err)
	}
	if !d.Accepted || d.Presented != token || d.Reason != "" {
		t.Fatalf("Write(%d, %q) = %+v, want accepted", token, value, d)
	}
}

func wantState(ctx context.Context, t *testing.T, r Resource, value string, mark int64) {
	t.Helper()
	v, m, err := r.Read(ctx)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if v != value || m != mark {
		t.Fatalf("stored value %q, mark %d; want %q, %d", v, m, value, mark)
	}
}

// Memory is the in-process guard (guard.Guard) with a value beside it, the
// reference the other guards are compared with. Its Write holds a lock
// around check-and-store, as an in-process resource does.
func Memory() Resource { return &memory{g: guard.New()} }

type memory struct {
	mu    sync.Mutex
	g     *guard.Guard
	value string
}

const memoryID = "guardtest:memory"

func (m *memory) Write(_ context.Context, token int64, value string) (guard.Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.g.Check(memoryID, token)
	if err == nil && d.Accepted {
		m.value = value
	}
	return d, err
}

func (m *memory) Read(context.Context) (string, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	hw, err := m.g.HighWater(memoryID)
	return m.value, hw, err
}

func (m *memory) BadCalls() map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"empty resource id": func(context.Context) error { _, err := m.g.Check("", 10); return err },
		"control character": func(context.Context) error { _, err := m.g.Check("a\x00b", 10); return err },
		"161-byte id": func(context.Context) error {
			_, err := m.g.Check(fmt.Sprintf("%0161d", 0), 10)
			return err
		},
	}
}
