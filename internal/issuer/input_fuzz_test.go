package issuer

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/fenceview/fenceview"
)

// What the entry accepts needs no escaping where it lands: a Prometheus
// label value, a CSV cell (no formula start), HTML text, the history.
func FuzzReportedFields(f *testing.F) {
	for _, s := range []string{"stale-token", "api:10.0.0.7", "a\"b", "=cmd", "x\ny", "\u202eabc", "shard-1\u200b", "caf\u00e9", "", "plugin/orders-db"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, skewMs int64) {
		unsafe := func(c rune) bool {
			return c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c == '\'' || c == ',' || c == '=' ||
				unicode.IsSpace(c) || unicode.IsControl(c) || c > unicode.MaxASCII
		}
		if fenceview.ValidateReason(s) == nil {
			if len(s) == 0 || len(s) > fenceview.MaxReasonLen || strings.IndexFunc(s, unsafe) >= 0 || strings.ContainsAny(s[:1], "+-@0123456789") {
				t.Fatalf("reason %q accepted", s)
			}
		}
		if fenceview.ValidateSource(s) == nil {
			if len(s) == 0 || len(s) > fenceview.MaxSourceLen || strings.IndexFunc(s, unsafe) >= 0 || strings.ContainsAny(s[:1], "+-@=") {
				t.Fatalf("source %q accepted", s)
			}
		}
		if ValidateNewID(s) == nil {
			for _, r := range s {
				if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || (r > unicode.MaxASCII && unicode.IsSpace(r)) ||
					unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) || r == 0x2800 {
					t.Fatalf("id %q with %U accepted", s, r)
				}
			}
		}
		now := time.Date(2026, 9, 24, 6, 14, 22, 0, time.UTC)
		at := now.Add(time.Duration(skewMs) * time.Millisecond)
		if err := checkAt(at, now); (err == nil) != (!at.After(now.Add(MaxClockSkew)) && !at.Before(now.Add(-MaxReportAge))) {
			t.Fatalf("at %v: %v", at, err)
		}
	})
}
