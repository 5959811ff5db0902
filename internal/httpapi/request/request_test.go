package request_test

import (
	"net/url"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

// Every integer query parameter (limit on both lists, since, the two
// numbers of a rejection cursor) takes a strict decimal and refuses the
// same spellings: a parameter that took "+5" while another refused it
// would be two rules for one input.
func TestIntegerParametersAgree(t *testing.T) {
	parsers := map[string]func(v string) error{
		"rejections limit": func(v string) error { _, err := request.RejectionFilter(url.Values{"limit": {v}}); return err },
		"resources limit":  func(v string) error { _, err := request.ParseResourceList(url.Values{"limit": {v}}); return err },
		"events since":     func(v string) error { _, err := request.Since(url.Values{"since": {v}}); return err },
		"cursor time":      func(v string) error { _, err := request.Cursor(v + "-7"); return err },
		"cursor seq":       func(v string) error { _, err := request.Cursor("1758700000000-" + v); return err },
	}
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"5", true}, {"05", true}, {"1000", true},
		{"+5", false}, {" 5", false}, {"5 ", false}, {"5x", false}, {"0x5", false},
		{"1_0", false}, {"5.0", false}, {"1e2", false}, {"٥", false}, {"", false},
		{"99999999999999999999", false},
	} {
		for name, parse := range parsers {
			err := parse(c.v)
			if c.v == "" && name != "cursor time" && name != "cursor seq" {
				// An empty parameter is an absent one: the default.
				if err != nil {
					t.Errorf("%s=%q: %v, want the default", name, c.v, err)
				}
				continue
			}
			if (err == nil) != c.ok {
				t.Errorf("%s=%q: error %v, want ok=%v", name, c.v, err, c.ok)
			}
			if err != nil && fenceview.ErrorCode(err) != fenceview.EINVALID {
				t.Errorf("%s=%q: code %s, want %s", name, c.v, fenceview.ErrorCode(err), fenceview.EINVALID)
			}
		}
	}
}

func TestIntBounds(t *testing.T) {
	for _, c := range []struct {
		s      string
		lo, hi int64
		want   int64
		ok     bool
	}{
		{"0", 0, 10, 0, true},
		{"-0", 0, 10, 0, true},
		{"-1", 0, 10, 0, false},
		{"-1", -5, 10, -1, true},
		{"10", 0, 10, 10, true},
		{"11", 0, 10, 0, false},
		{"9223372036854775807", 0, 1<<63 - 1, 1<<63 - 1, true},
		{"9223372036854775808", 0, 1<<63 - 1, 0, false},
		{"-", -5, 5, 0, false},
		{"--1", -5, 5, 0, false},
		{"+0", 0, 5, 0, false},
	} {
		n, ok := request.Int(c.s, c.lo, c.hi)
		if n != c.want || ok != c.ok {
			t.Errorf("Int(%q, %d, %d) = %d, %v; want %d, %v", c.s, c.lo, c.hi, n, ok, c.want, c.ok)
		}
	}
}
