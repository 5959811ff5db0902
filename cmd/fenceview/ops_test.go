package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/servertest"
	"github.com/fenceview/fenceview/internal/sqlite"
)

func TestVersionFlag(t *testing.T) {
	m := NewMain()
	var out bytes.Buffer
	m.Stdout = &out
	if err := m.ParseFlags([]string{"--version"}); !errors.Is(err, errVersion) {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "fenceview ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version printed %q", out.String())
	}
}

func TestLogFlagsRefuseNonsense(t *testing.T) {
	for _, args := range [][]string{{"--log-format", "yaml"}, {"--log-level", "loud"}} {
		if err := NewMain().ParseFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestJSONLogAndAccessLog: --log-format json gives one JSON object per
// line, --log-level debug lets debug through, and --access-log writes a
// line per answered request with its route pattern and status.
func TestJSONLogAndAccessLog(t *testing.T) {
	var logs servertest.LogBuffer
	s := startServer(t, func(m *Main) {
		m.LogOutput = &logs
		if err := m.ParseFlags([]string{"--log-format", "json", "--log-level", "warn", "--access-log"}); err != nil {
			t.Fatal(err)
		}
	})
	s.do("GET", "/v1/locks/"+url.PathEscape("orders/7"), nil)
	s.do("POST", "/v1/locks/x/acquire", `{"holder":""}`)
	if err := s.Close(); err != nil { // waits for every handler, so every line is written
		t.Fatal(err)
	}
	var access []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["level"] == "INFO" && rec["log"] != "access" {
			t.Errorf("info line logged at --log-level warn: %q", line)
		}
		if rec["log"] == "access" {
			access = append(access, rec)
		}
	}
	if len(access) != 2 {
		t.Fatalf("access lines: %v, want 2", access)
	}
	if a := access[0]; a["route"] != "GET /v1/locks/{resource}" || a["status"] != float64(200) || a["path"] != "/v1/locks/orders%2F7" || a["method"] != "GET" {
		t.Errorf("access line: %v", a)
	}
	if a := access[1]; a["status"] != float64(400) {
		t.Errorf("access line of a bad request: %v", a)
	}
}

// TestBackupUnderLoadRestoresConsistently takes backups with the command
// while clients grant, write and release as fast as they can, then checks
// each copy: SQLite's integrity check, an unbroken event history, resource
// rows that agree with their events, and a server started on the copy (the
// restore) that carries on above the copy's last token.
func TestBackupUnderLoadRestoresConsistently(t *testing.T) {
	s := startServer(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var ops atomic.Int64
	stop := make(chan struct{})
	warm := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := url.PathEscape(fmt.Sprintf("load/%d", c%4))
			holder := fmt.Sprintf(`{"holder":"c%d","waitMs":10000}`, c)
			release := fmt.Sprintf(`{"holder":"c%d"}`, c) // a release takes no waitMs
			for {
				select {
				case <-stop:
					return
				default:
				}
				g, err := postOK(client, "/v1/locks/"+res+"/acquire", s.URL(), holder, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var grant struct{ Fencing struct{ Token int64 } }
				json.Unmarshal(g, &grant)
				if _, err := postOK(client, "/v1/fence/"+res, s.URL(), "", map[string]string{"X-Fencing-Token": fmt.Sprint(grant.Fencing.Token)}); err != nil {
					t.Error(err)
					return
				}
				if _, err := postOK(client, "/v1/locks/"+res+"/release", s.URL(), release, nil); err != nil {
					t.Error(err)
					return
				}
				if ops.Add(1) == 50 {
					once.Do(func() { close(warm) })
				}
			}
		}()
	}
	<-warm // the load is running
	dir := t.TempDir()
	var copies []string
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("copy-%d.db", i))
		var stdout, stderr bytes.Buffer
		if code := runBackup(context.Background(), []string{"--db", s.DBPath, "--out", out}, &stdout, &stderr); code != 0 {
			t.Fatalf("backup: exit %d: %s", code, stderr.String())
		}
		copies = append(copies, out)
	}
	during := ops.Load()
	close(stop)
	wg.Wait()
	t.Logf("%d cycles before the last backup finished, %d in all", during, ops.Load())

	var stderr bytes.Buffer
	if code := runBackup(context.Background(), []string{"--db", s.DBPath, "--out", copies[0]}, &bytes.Buffer{}, &stderr); code == 0 {
		t.Error("a backup overwrote an existing file")
	}

	for _, c := range copies {
		last := checkCopy(t, c)
		// Restore: a server on the copy carries on above it.
		r := startServer(t, func(m *Main) { m.DBPath = c })
		r.clock.Advance(31 * time.Second) // a lease the copy caught in flight runs out
		g := r.acquire("load/0", "after-restore", 1000)
		if tok := tokenOf(g); tok != last["load/0"]+1 {
			t.Errorf("%s: first grant after restore took token %d, want %d", c, tok, last["load/0"]+1)
		}
	}
}

func postOK(c *http.Client, path, base, body string, header map[string]string) ([]byte, error) {
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s: %d %s", path, res.StatusCode, b.Bytes())
	}
	return b.Bytes(), nil
}

// checkCopy checks one backup and returns each resource's last token.
func checkCopy(t *testing.T, path string) map[string]int64 {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("%s: integrity check %q %v", path, check, err)
	}
	var n, lo, hi int64
	if err := db.QueryRow(`SELECT COUNT(*), MIN(seq), MAX(seq) FROM events`).Scan(&n, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if n == 0 || lo != 1 || hi != n {
		t.Errorf("%s: %d events numbered %d..%d: the history has holes", path, n, lo, hi)
	}
	rows, err := db.Query(`
		SELECT r.resource_id, r.last_token, r.high_water_mark, r.accepted,
		       (SELECT COALESCE(MAX(token), 0) FROM events e WHERE e.resource_id = r.resource_id AND e.type = 'grant'),
		       (SELECT COALESCE(MAX(token), 0) FROM events e WHERE e.resource_id = r.resource_id AND e.type = 'accept'),
		       (SELECT COUNT(*) FROM events e WHERE e.resource_id = r.resource_id AND e.type = 'accept')
		FROM resources r`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := map[string]int64{}
	for rows.Next() {
		var id string
		var lastToken, hwm, accepted, maxGrant, maxAccept, nAccept int64
		if err := rows.Scan(&id, &lastToken, &hwm, &accepted, &maxGrant, &maxAccept, &nAccept); err != nil {
			t.Fatal(err)
		}
		if lastToken != maxGrant || hwm != maxAccept || accepted != nAccept {
			t.Errorf("%s: resource %s says last token %d, mark %d, %d accepted; its events say %d, %d, %d",
				path, id, lastToken, hwm, accepted, maxGrant, maxAccept, nAccept)
		}
		last[id] = lastToken
	}
	if len(last) != 4 {
		t.Errorf("%s: %d resources, want 4", path, len(last))
	}
	// The copy opens as a fenceview database (migrations recorded).
	if d, err := sqlite.Open(context.Background(), path); err != nil {
		t.Errorf("%s: %v", path, err)
	} else {
		d.Close()
	}
	return last
}
