package guardtest

import (
	"errors"
	"testing"

	"github.com/fenceview/fenceview/guard"
)

// Step is one check: a resource and the token presented to it.
type Step struct {
	Resource string
	Token    int64
}

// Steps is a short mixed sequence for Agree: a repeat, a lower and a
// higher token on one resource, and ids with a slash, non-ASCII bytes and
// a brace (a Redis hash tag's first byte).
func Steps() []Step {
	return []Step{
		{Resource: "a", Token: 5}, {Resource: "a", Token: 5}, {Resource: "a", Token: 4},
		{Resource: "a/b ü", Token: 1}, {Resource: "a", Token: 9}, {Resource: "a", Token: 8},
		{Resource: "a/b ü", Token: 1}, {Resource: "{a", Token: 3},
	}
}

// Agree presents steps, in order, to check and to a fresh guard.Guard, and
// fails the test at the first step where they decide differently or fail
// with a different kind of error (an invalid resource id, an invalid
// token). A guard that does not read the previous mark when it accepts
// (sqlguard's Marks) passes readsMark false: an acceptance's Required is
// then not compared. Agree returns the reference guard, holding the marks
// check should now hold.
func Agree(t *testing.T, steps []Step, readsMark bool, check func(resourceID string, token int64) (guard.Decision, error)) *guard.Guard {
	t.Helper()
	g := guard.New()
	for _, s := range steps {
		want, wantErr := g.Check(s.Resource, s.Token)
		got, err := check(s.Resource, s.Token)
		if (err == nil) != (wantErr == nil) || (err != nil && !sameKind(err, wantErr)) {
			t.Fatalf("Check(%q, %d) err = %v, guard.Guard says %v", s.Resource, s.Token, err, wantErr)
		}
		if want.Accepted && !readsMark {
			want.Required = 0
		}
		if got != want {
			t.Fatalf("Check(%q, %d) = %+v, guard.Guard says %+v", s.Resource, s.Token, got, want)
		}
	}
	return g
}

func sameKind(a, b error) bool {
	for _, e := range []error{guard.ErrInvalidResourceID, guard.ErrInvalidToken} {
		if errors.Is(a, e) && errors.Is(b, e) {
			return true
		}
	}
	return false
}
