package main

import (
	"testing"
	"time"
)

// The history retention flags reach the server's configuration, and a
// negative bound is refused rather than read as "keep everything".
func TestHistoryRetentionFlags(t *testing.T) {
	m := NewMain()
	if m.History.MaxAge != 0 || m.History.MaxEvents != 0 {
		t.Fatalf("default retention %+v; want every event kept", m.History)
	}
	if err := m.ParseFlags([]string{"--history-retention", "720h", "--history-max-events=50000000"}); err != nil {
		t.Fatal(err)
	}
	if m.History.MaxAge != 720*time.Hour || m.History.MaxEvents != 50_000_000 {
		t.Fatalf("retention %+v; want 720h and 50,000,000 events", m.History)
	}
	for _, bad := range [][]string{{"--history-retention", "-1h"}, {"--history-max-events", "-5"}, {"--history-max-events", "many"}} {
		if err := NewMain().ParseFlags(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
