package sqlite

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Rows come back from the database byte for byte: any string
// (quotes, backslashes, control characters, invalid UTF-8), the extreme
// integers, the zero time and millisecond times.
func TestRowsRoundTripExactly(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	strs := []string{"", "plain", `q"u\o\"te`, "tab\there\nnl\x00nul", "\xff\xfe not utf-8 \xc3", "ünï😀", "null", "[1,2]"}
	at := time.UnixMilli(1_700_000_123_456).UTC()
	var rows []*fenceview.Resource
	var events []fenceview.Event
	for i, s := range strs {
		id := "r" + s
		r := &fenceview.Resource{ResourceID: id, LastToken: math.MaxInt64 - 1, HighWaterMark: int64(i), Holder: s,
			HoldCount: i, Token: math.MaxInt64 - 1, LeaseMs: math.MaxInt64, Accepted: int64(i) << 40, Rejected: 0,
			CounterAlarm: math.MaxInt64 - 1, OwnerKey: s}
		if i%2 == 0 {
			r.GrantedAt, r.ExpiresAt, r.LastRejectionAt = at, at.Add(time.Millisecond), at.Add(-time.Hour)
		}
		rows = append(rows, r)
		events = append(events, fenceview.Event{Seq: int64(i + 1), Type: s, ResourceID: id, Token: math.MaxInt64 - 1,
			Holder: s, Presented: math.MinInt64, Required: -1, Reason: s, Source: s, At: at})
	}
	if err := db.Apply(ctx, rows, events); err != nil {
		t.Fatal(err)
	}
	got, err := db.Resources(ctx)
	if err != nil || len(got) != len(rows) {
		t.Fatalf("%d resources, %v", len(got), err)
	}
	byID := map[string]fenceview.Resource{}
	for _, r := range got {
		byID[r.ResourceID] = *r
	}
	for _, r := range rows {
		if !reflect.DeepEqual(byID[r.ResourceID], *r) {
			t.Errorf("resource %q came back as\n%+v, was\n%+v", r.ResourceID, byID[r.ResourceID], *r)
		}
	}
	back, err := db.EventsAfter(ctx, 0, "", 100)
	if err != nil || !reflect.DeepEqual(back, events) {
		t.Fatalf("events came back as\n%+v (%v), were\n%+v", back, err, events)
	}
}
