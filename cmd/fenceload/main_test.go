package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

// A short mixed run against the real server: every kind appears in the
// JSON report with its rate and latencies, the checks pass, and every
// stale write was refused.
func TestRunWritesJSONReport(t *testing.T) {
	base := fenceviewtest.New(t).URL
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout bytes.Buffer
	err := run(context.Background(), []string{
		"-url", base, "-clients", "4", "-resources", "8", "-duration", "1s", "-warmup", "0",
		"-mix", "grant=1,fence=1,stale=1", "-json", out,
		"-server-pid", strconv.Itoa(os.Getpid()), // the server runs in this test's process
	}, &stdout)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Target        string                        `json:"target"`
		Clients       int                           `json:"clients"`
		Resources     int                           `json:"resources"`
		Mix           map[string]int                `json:"mix"`
		DurationSec   float64                       `json:"durationSec"`
		Ops           map[string]map[string]float64 `json:"ops"`
		TokensChecked int64                         `json:"tokensChecked"`
		Accepted      int64                         `json:"accepted"`
		Rejected      int64                         `json:"rejected"`
		Errors        int64                         `json:"errors"`
		Status5xx     *int64                        `json:"status5xx"`
		Violations    []string                      `json:"violations"`
		OK            bool                          `json:"ok"`
		CPU           *struct {
			ServerUs float64 `json:"serverUsPerOp"`
			LoadUs   float64 `json:"loadUsPerOp"`
			Busy     float64 `json:"machineBusy"`
			CPUs     int     `json:"cpus"`
		} `json:"cpu"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Target != "fenceview" || rep.Clients != 4 || rep.Resources != 8 || rep.DurationSec <= 0 {
		t.Errorf("header = %+v", rep)
	}
	if rep.Mix["grant"] != 1 || rep.Mix["fence"] != 1 || rep.Mix["stale"] != 1 {
		t.Errorf("mix = %v", rep.Mix)
	}
	for _, kind := range []string{"cycle", "acquire", "release", "fence", "stale"} {
		s, ok := rep.Ops[kind]
		if !ok {
			t.Errorf("ops has no %q: %s", kind, raw)
			continue
		}
		for _, f := range []string{"count", "opsPerSec", "meanMs", "p50Ms", "p99Ms", "maxMs"} {
			if _, ok := s[f]; !ok {
				t.Errorf("ops.%s has no %q", kind, f)
			}
		}
		if s["count"] < 1 || s["p50Ms"] <= 0 || s["p50Ms"] > s["p99Ms"] || s["p99Ms"] > s["maxMs"] {
			t.Errorf("ops.%s = %v", kind, s)
		}
	}
	if !rep.OK || rep.Errors != 0 || rep.Status5xx == nil || *rep.Status5xx != 0 || len(rep.Violations) != 0 {
		t.Errorf("checks: ok=%v errors=%d violations=%v", rep.OK, rep.Errors, rep.Violations)
	}
	if rep.TokensChecked < int64(rep.Ops["cycle"]["count"]) {
		t.Errorf("tokensChecked %d < cycles %v", rep.TokensChecked, rep.Ops["cycle"]["count"])
	}
	if rep.Rejected < int64(rep.Ops["stale"]["count"]) {
		t.Errorf("rejected %d < stale writes %v: a stale write was accepted", rep.Rejected, rep.Ops["stale"]["count"])
	}
	if !strings.Contains(stdout.String(), "p99 ms") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
	if runtime.GOOS == "linux" {
		// A second of requests costs the process far more than the
		// 10 ms granularity of Linux's CPU times.
		if c := rep.CPU; c == nil || c.ServerUs <= 0 || c.LoadUs <= 0 || c.Busy <= 0 || c.Busy > 1 || c.CPUs != runtime.NumCPU() {
			t.Errorf("cpu = %+v in %s", c, raw)
		}
		if !strings.Contains(stdout.String(), "CPU: server ") {
			t.Errorf("no CPU line on stdout:\n%s", stdout.String())
		}
	}
}

// The same command against a proxy that rewrites every granted token to 1:
// the second grant of the one resource goes backwards, and the run fails
// with the violation in its report.
func TestRunFailsWhenTokensGoBackwards(t *testing.T) {
	base, _ := url.Parse(fenceviewtest.New(t).URL)
	token := regexp.MustCompile(`"token":\d+`)
	proxy := httputil.NewSingleHostReverseProxy(base)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/acquire") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		b = token.ReplaceAll(b, []byte(`"token":1`))
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()

	out := filepath.Join(t.TempDir(), "report.json")
	var stdout bytes.Buffer
	err := run(context.Background(), []string{
		"-url", front.URL, "-clients", "1", "-resources", "1", "-duration", "200ms", "-warmup", "0",
		"-mix", "grant", "-json", out,
	}, &stdout)
	if err == nil || !strings.Contains(err.Error(), "violation") {
		t.Fatalf("run = %v, want a violation\n%s", err, stdout.String())
	}
	var rep struct {
		OK         bool     `json:"ok"`
		Violations []string `json:"violations"`
	}
	raw, _ := os.ReadFile(out)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Violations) == 0 || !strings.Contains(rep.Violations[0], "token 1 granted after 1") {
		t.Errorf("report: ok=%v violations=%v", rep.OK, rep.Violations)
	}
	if !strings.Contains(stdout.String(), "VIOLATION") {
		t.Errorf("stdout does not show the violation:\n%s", stdout.String())
	}
}

// The Go client's transports pass the same checks.
func TestRunThroughTheGoClient(t *testing.T) {
	base := fenceviewtest.New(t).URL
	for _, tr := range []string{"client", "rpc"} {
		out := filepath.Join(t.TempDir(), tr+".json")
		var stdout bytes.Buffer
		err := run(context.Background(), []string{
			"-url", base, "-transport", tr, "-clients", "4", "-resources", "8", "-duration", "500ms", "-warmup", "0",
			"-mix", "grant=1,fence=1,stale=1", "-json", out,
		}, &stdout)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tr, err, stdout.String())
		}
		var rep struct {
			Target string                     `json:"target"`
			Ops    map[string]json.RawMessage `json:"ops"`
			OK     bool                       `json:"ok"`
		}
		raw, _ := os.ReadFile(out)
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		if !rep.OK || rep.Target != "fenceview-"+tr || rep.Ops["cycle"] == nil {
			t.Errorf("%s: %s", tr, raw)
		}
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-mix", "grant=x"},
		{"-mix", "write=1"},
		{"-clients", "0"},
		{"-server-pid", "-1"},
		{"-url", "ftp://x"},
		{"-transport", "carrier-pigeon"},
		{"extra"},
	} {
		err := run(context.Background(), args, io.Discard)
		if !errors.As(err, new(cmdmain.UsageError)) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}
