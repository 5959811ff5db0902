package guard_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// Table must answer every call exactly as Guard does: same decisions, same
// errors, same marks.
func TestTableAgreesWithGuard(t *testing.T) {
	ids := []string{"a", "b", "заказ/42 🧾", "", "bad\xff", "tab\t", strings.Repeat("x", 161), strings.Repeat("y", 160)}
	g, tb, lg := guard.New(), guard.NewTable(), &guard.Ledger{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		id := ids[rng.IntN(len(ids))]
		tok := rng.Int64N(40) - 5
		switch rng.IntN(3) {
		case 0:
			d1, e1 := g.Check(id, tok)
			d2, e2 := tb.Check(id, tok)
			d3, e3 := lg.Check(id, tok)
			if d1 != d2 || errString(e1) != errString(e2) || d1 != d3 || errString(e1) != errString(e3) {
				t.Fatalf("Check(%q,%d): guard %+v %v, table %+v %v, ledger %+v %v", id, tok, d1, e1, d2, e2, d3, e3)
			}
		case 1:
			h1, e1 := g.Seed(id, tok)
			h2, e2 := tb.Seed(id, tok)
			h3, e3 := lg.Seed(id, tok)
			if h1 != h2 || errString(e1) != errString(e2) || h1 != h3 || errString(e1) != errString(e3) {
				t.Fatalf("Seed(%q,%d): guard %d %v, table %d %v, ledger %d %v", id, tok, h1, e1, h2, e2, h3, e3)
			}
		case 2:
			h1, e1 := g.HighWater(id)
			h2, e2 := tb.HighWater(id)
			h3, e3 := lg.HighWater(id)
			if h1 != h2 || errString(e1) != errString(e2) || h1 != h3 || errString(e1) != errString(e3) {
				t.Fatalf("HighWater(%q): guard %d %v, table %d %v, ledger %d %v", id, h1, e1, h2, e2, h3, e3)
			}
		}
	}
	if !reflect.DeepEqual(g.Marks(), tb.Marks()) || !reflect.DeepEqual(g.Marks(), lg.Marks()) {
		t.Fatalf("marks differ: guard %v, table %v, ledger %v", g.Marks(), tb.Marks(), lg.Marks())
	}
}

func TestTableHandles(t *testing.T) {
	tb := guard.NewTable()
	h, err := tb.Handle("r")
	if err != nil || h == 0 {
		t.Fatalf("Handle = %d, %v", h, err)
	}
	if h2, _ := tb.Handle("r"); h2 != h {
		t.Fatalf("second Handle = %d, want %d", h2, h)
	}
	if m := tb.Marks(); len(m) != 0 {
		t.Fatalf("a handle alone created a mark: %v", m)
	}
	if d, err := tb.CheckHandle(h, 7); err != nil || !d.Accepted {
		t.Fatalf("CheckHandle 7 = %+v, %v", d, err)
	}
	// By name and by handle are the same mark.
	if d, _ := tb.Check("r", 6); d.Accepted || d.Required != 7 {
		t.Fatalf("Check by name after handle = %+v", d)
	}
	if hwm, _ := tb.HighWaterHandle(h); hwm != 7 {
		t.Fatalf("HighWaterHandle = %d", hwm)
	}
	if id, _ := tb.ResourceID(h); id != "r" {
		t.Fatalf("ResourceID = %q", id)
	}
	for _, bad := range []guard.Handle{0, h + 1, 1 << 31} {
		if _, err := tb.CheckHandle(bad, 100); !errors.Is(err, guard.ErrUnknownHandle) {
			t.Errorf("CheckHandle(%d) err = %v", bad, err)
		}
		if _, err := tb.HighWaterHandle(bad); !errors.Is(err, guard.ErrUnknownHandle) {
			t.Errorf("HighWaterHandle(%d) err = %v", bad, err)
		}
	}
	if _, err := tb.CheckHandle(h, 0); !errors.Is(err, guard.ErrInvalidToken) {
		t.Errorf("CheckHandle token 0 err = %v", err)
	}
	if _, err := tb.Handle(""); !errors.Is(err, guard.ErrInvalidResourceID) {
		t.Errorf("Handle(\"\") err = %v", err)
	}
	if hwm, _ := tb.HighWater("r"); hwm != 7 {
		t.Fatalf("bad input moved the mark to %d", hwm)
	}
}

// The table owns its keys: a caller reusing the bytes behind an id it passed
// must not rename a resource.
func TestTableOwnsKeys(t *testing.T) {
	tb := guard.NewTable()
	buf := []byte("alpha")
	id := unsafeString(buf)
	if _, err := tb.Check(id, 5); err != nil {
		t.Fatal(err)
	}
	copy(buf, "omega")
	if hwm, _ := tb.HighWater("alpha"); hwm != 5 {
		t.Fatalf("alpha mark = %d after the caller reused its buffer", hwm)
	}
}

func TestTableConcurrentChecksKeepTheMaximum(t *testing.T) {
	tb := guard.NewTable()
	h, _ := tb.Handle("r")
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 1; i <= 500; i++ {
				tok := int64(i*8 + w)
				var d guard.Decision
				if i%2 == 0 {
					d, _ = tb.CheckHandle(h, tok)
				} else {
					d, _ = tb.Check("r", tok)
				}
				if d.Accepted && d.Required > tok {
					t.Errorf("accepted %d below mark %d", tok, d.Required)
				}
			}
		}(w)
	}
	wg.Wait()
	if hwm, _ := tb.HighWater("r"); hwm != 500*8+7 {
		t.Fatalf("final mark %d, want %d", hwm, 500*8+7)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
