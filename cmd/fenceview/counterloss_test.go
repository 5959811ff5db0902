package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// The database is restored from an older copy: the counter is behind the
// tokens in use. A guard's unsigned report of a higher mark raises an alarm
// but moves nothing (it could be a lie), and an admin resets the counter
// deliberately.
func TestCounterLossAfterRestoringAnOlderCopy(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "fenceview.db")
	backup := filepath.Join(dir, "backup.db")
	withDB := func(m *Main) { m.DBPath = db; m.AdminToken = "admin" }

	s := startServer(t, withDB)
	for i := 0; i < 3; i++ {
		s.acquire("inv:42", "a", 1000)
		s.do("POST", "/v1/locks/inv:42/expire", nil, "Authorization", "Bearer admin")
	}
	s.Close() // a clean stop folds the WAL into the file
	copyFile(t, db, backup)

	s = startServer(t, withDB)
	var last int64
	for i := 0; i < 7; i++ {
		last = tokenOf(s.acquire("inv:42", "a", 1000))
		s.do("POST", "/v1/locks/inv:42/expire", nil, "Authorization", "Bearer admin")
	}
	if last != 10 {
		t.Fatalf("last token before the restore = %d, want 10", last)
	}
	s.Close()

	// Restore the older copy.
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(db + suffix)
	}
	copyFile(t, backup, db)
	s = startServer(t, withDB)
	events := s.stream("")

	// The server cannot know yet: it issues 4, a token already used once.
	if tok := tokenOf(s.acquire("inv:42", "b", 1000)); tok != 4 {
		t.Fatalf("first token after the restore = %d, want 4", tok)
	}
	s.do("POST", "/v1/locks/inv:42/expire", nil, "Authorization", "Bearer admin")
	// The resource's own guard (a plugin) refused it: its mark is 10.
	r := s.do("POST", "/v1/decisions", map[string]any{"decisions": []map[string]any{
		{"resourceId": "inv:42", "token": 4, "accepted": false, "required": 10, "source": "inventory-db"},
	}})
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Raw)
	}
	var alarm event
	for alarm.Type != "alarm" {
		alarm = events.next()
	}
	if alarm.Reason != "counter-behind" || alarm.Token != 10 || alarm.Required == nil || *alarm.Required != 4 || alarm.ResourceID != "inv:42" {
		t.Fatalf("alarm event: %+v", alarm)
	}
	// An unsigned report cannot move the counter or the server's mark
	// (one such report of 2^63-1 used to exhaust a resource): the alarm
	// says the counter is behind, and an admin resets it deliberately.
	res := s.do("GET", "/v1/resources/inv:42", nil)
	if res.num("counterAlarm") != 10 || res.num("highWaterMark") != 0 || res.num("lastToken") != 4 {
		t.Fatalf("resource during the alarm: %s", res.Raw)
	}
	metrics := string(s.do("GET", "/metrics", nil).Raw)
	if !strings.Contains(metrics, "fenceview_counter_alarms 1\n") || !strings.Contains(metrics, "fenceview_counter_alarms_total 1\n") {
		t.Fatalf("metrics during the alarm:\n%s", metrics)
	}
	if tok := tokenOf(s.acquire("inv:42", "b", 1000)); tok != 5 {
		t.Fatalf("token after an unsigned report of mark 10 = %d, want last issued + 1 = 5", tok)
	}
	s.do("POST", "/v1/locks/inv:42/expire", nil, "Authorization", "Bearer admin")

	// The alarm stays until an admin resets the counter, deliberately.
	if r := s.do("POST", "/v1/locks/inv:42/reset", map[string]any{"floor": 1000}, "Authorization", ""); r.Status != 401 {
		t.Fatalf("reset without the admin token: %d %s", r.Status, r.Raw)
	}
	for _, bad := range []string{`{}`, `{"floor":0}`, `{"floor":-1}`, `{"floor":"1000"}`, `{"floor":9223372036854775807}`} {
		if r := s.do("POST", "/v1/locks/inv:42/reset", bad, "Authorization", "Bearer admin"); r.Status != 400 {
			t.Fatalf("reset with %s: %d %s", bad, r.Status, r.Raw)
		}
	}
	if res := s.do("GET", "/v1/resources/inv:42", nil); res.num("counterAlarm") != 10 {
		t.Fatalf("alarm cleared without a reset: %s", res.Raw)
	}
	r = s.do("POST", "/v1/locks/inv:42/reset", map[string]any{"floor": 1000}, "Authorization", "Bearer admin")
	if r.Status != 200 || r.num("lastToken") != 1000 || r.num("nextToken") != 1001 {
		t.Fatalf("reset: %d %s", r.Status, r.Raw)
	}
	if res := s.do("GET", "/v1/resources/inv:42", nil); res.num("counterAlarm") != 0 {
		t.Fatalf("alarm after the reset: %s", res.Raw)
	}
	if tok := tokenOf(s.acquire("inv:42", "c", 1000)); tok != 1001 {
		t.Fatalf("token after the reset = %d, want 1001", tok)
	}
	// A floor below the counter never moves it down.
	r = s.do("POST", "/v1/locks/inv:42/reset", map[string]any{"floor": 6}, "Authorization", "Bearer admin")
	if r.Status != 200 || r.num("lastToken") != 1001 {
		t.Fatalf("reset to a lower floor: %d %s", r.Status, r.Raw)
	}
}
