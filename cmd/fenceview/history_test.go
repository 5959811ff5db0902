package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
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

// A server started with --history-max-events prunes its history in the
// background (the first round at start), and leaves every counter where
// it was: the next grant takes the next token, the next event the next
// sequence number.
func TestServerPrunesHistoryKeepingCounters(t *testing.T) {
	db := filepath.Join(t.TempDir(), "fenceview.db")
	s := startServer(t, func(m *Main) { m.DBPath = db })
	for i := range 20 {
		if r := s.acquire(fmt.Sprintf("r-%d", i%4), "a", 1000); r.Status != 200 {
			t.Fatalf("acquire: %d %s", r.Status, r.Raw)
		}
	}
	s.Close()

	rounds := make(chan slog.Record, 8)
	s = startServer(t, func(m *Main) {
		m.DBPath = db
		m.History.MaxEvents = 5
		m.Logger = slog.New(recordsOf("history pruned", rounds))
	})
	rec := <-rounds
	var deleted int64
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "deleted" {
			deleted = a.Value.Int64()
		}
		return true
	})
	if deleted != 15 {
		t.Fatalf("the first round pruned %d events; want 15 of 20", deleted)
	}
	left, err := s.DB.EventsAfter(context.Background(), 0, "", 100)
	if err != nil || len(left) != 5 || left[0].Seq != 16 {
		t.Fatalf("history left: %d events from %v, %v; want 5 from seq 16", len(left), left, err)
	}
	if r := s.do("GET", "/v1/resources/r-0", nil); r.Status != 200 || r.num("lastToken") != 5 {
		t.Fatalf("r-0 after pruning: %d %s; want lastToken 5", r.Status, r.Raw)
	}
	s.clock.Advance(2 * time.Second) // the 1 s leases are over
	if r := s.acquire("r-0", "b", 1000); r.Status != 200 || tokenOf(r) != 6 {
		t.Fatalf("acquire after pruning: %d %s; want token 6", r.Status, r.Raw)
	}
	if last, err := s.DB.MaxSeq(context.Background()); err != nil || last <= 20 {
		t.Fatalf("last seq after pruning and a grant: %d, %v; want above 20", last, err)
	}
}

// recordsOf is a log handler that hands the records with message msg to
// out (without waiting) and drops everything else.
func recordsOf(msg string, out chan<- slog.Record) slog.Handler { return recordHandler{msg, out} }

type recordHandler struct {
	msg string
	out chan<- slog.Record
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.out <- r.Clone():
		default:
		}
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }
