package guard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// The seed's verification cases for the resource side.
func TestLowerTokenRefusedAfterHigher(t *testing.T) {
	g := guard.New()
	mustCheck(t, g, "res-1", 42, true)
	d := mustCheck(t, g, "res-1", 41, false)
	if d.Reason != guard.ReasonStale || d.Required != 42 || d.Presented != 41 {
		t.Fatalf("stale decision = %+v, want stale-token required 42 presented 41", d)
	}
	if hwm, _ := g.HighWater("res-1"); hwm != 42 {
		t.Fatalf("refusal moved the high-water mark to %d", hwm)
	}
}

func TestSameTokenAcceptedTwice(t *testing.T) {
	g := guard.New()
	mustCheck(t, g, "res-1", 50, true)
	mustCheck(t, g, "res-1", 50, true)
}

func TestResourcesAreIndependent(t *testing.T) {
	g := guard.New()
	mustCheck(t, g, "a", 100, true)
	mustCheck(t, g, "b", 1, true)
	mustCheck(t, g, "b", 0+2, true)
	if m := g.Marks(); m["a"] != 100 || m["b"] != 2 || len(m) != 2 {
		t.Fatalf("marks = %v", m)
	}
}

func TestSeedNeverLowers(t *testing.T) {
	g := guard.New()
	if hwm, err := g.Seed("r", 10); err != nil || hwm != 10 {
		t.Fatalf("seed 10 = %d, %v", hwm, err)
	}
	if hwm, err := g.Seed("r", 3); err != nil || hwm != 10 {
		t.Fatalf("seed 3 after 10 = %d, %v; want 10", hwm, err)
	}
	mustCheck(t, g, "r", 9, false)
	mustCheck(t, g, "r", 10, true)
}

func TestInvalidInputChangesNothing(t *testing.T) {
	long := strings.Repeat("x", guard.MaxResourceIDLen+1)
	cases := []struct {
		id    string
		token int64
		want  error
	}{
		{"", 1, guard.ErrInvalidResourceID},
		{long, 1, guard.ErrInvalidResourceID},
		{"bad\xffutf8", 1, guard.ErrInvalidResourceID},
		{"tab\there", 1, guard.ErrInvalidResourceID},
		{"del\x7f", 1, guard.ErrInvalidResourceID},
		{"ok", 0, guard.ErrInvalidToken},
		{"ok", -5, guard.ErrInvalidToken},
	}
	g := guard.New()
	for _, c := range cases {
		if _, err := g.Check(c.id, c.token); !errors.Is(err, c.want) {
			t.Errorf("Check(%q, %d) err = %v, want %v", c.id, c.token, err, c.want)
		}
		if _, err := g.Seed(c.id, c.token); !errors.Is(err, c.want) {
			t.Errorf("Seed(%q, %d) err = %v, want %v", c.id, c.token, err, c.want)
		}
	}
	if m := g.Marks(); len(m) != 0 {
		t.Fatalf("invalid input recorded marks: %v", m)
	}
	// The longest valid id, and multi-byte text, are fine.
	mustCheck(t, g, strings.Repeat("x", guard.MaxResourceIDLen), 1, true)
	mustCheck(t, g, "заказ/42 🧾", 1, true)
}

func TestEnvelopeChecks(t *testing.T) {
	g := guard.New()
	mustCheck(t, g, "shard-1", 10, true)
	cases := []struct {
		tok    guard.Token
		reason string
	}{
		{guard.Token{Token: 99, Issuer: "other"}, guard.ReasonForeignIssuer},
		{guard.Token{Token: 99, Issuer: "me", Scope: "resource:shard-2"}, guard.ReasonScopeMismatch},
		{guard.Token{Token: 5, Scope: "shard-1"}, guard.ReasonScopeMismatch},
	}
	for _, c := range cases {
		d, err := g.CheckToken("me", "shard-1", c.tok)
		if err != nil {
			t.Fatal(err)
		}
		if d.Accepted || d.Reason != c.reason || d.Required != 10 {
			t.Errorf("CheckToken(%+v) = %+v, want refused %s required 10", c.tok, d, c.reason)
		}
	}
	if hwm, _ := g.HighWater("shard-1"); hwm != 10 {
		t.Fatalf("a foreign token moved the mark to %d", hwm)
	}
	d, err := g.CheckToken("me", "shard-1", guard.Token{Token: 11, Issuer: "me", Scope: guard.Scope("shard-1")})
	if err != nil || !d.Accepted {
		t.Fatalf("matching envelope = %+v, %v", d, err)
	}
}

func TestParseToken(t *testing.T) {
	good := map[string]int64{"1": 1, "1847": 1847, "9223372036854775807": 1<<63 - 1}
	for s, want := range good {
		if got, err := guard.ParseToken(s); err != nil || got != want {
			t.Errorf("ParseToken(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "9223372036854775808", "abc", "１"} {
		if _, err := guard.ParseToken(s); !errors.Is(err, guard.ErrInvalidToken) {
			t.Errorf("ParseToken(%q) err = %v, want ErrInvalidToken", s, err)
		}
	}
}

func mustCheck(t *testing.T, g *guard.Guard, id string, token int64, accepted bool) guard.Decision {
	t.Helper()
	d, err := g.Check(id, token)
	if err != nil {
		t.Fatalf("Check(%q, %d): %v", id, token, err)
	}
	if d.Accepted != accepted {
		t.Fatalf("Check(%q, %d) = %+v, want accepted=%v", id, token, d, accepted)
	}
	return d
}

func ExampleGuard_Check() {
	g := guard.New()
	g.Check("inventory:42", 42) // the new holder writes first
	d, _ := g.Check("inventory:42", 41)
	fmt.Println(d.Accepted, d.Reason, d.Required)
	// Output: false stale-token 42
}
