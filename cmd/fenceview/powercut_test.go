package main

import (
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/powercut"
	"github.com/fenceview/fenceview/internal/servertest"
)

// The power-cut harness: the crash harness's load and checks, with the
// real server's database on a powercut filesystem (internal/powercut),
// which keeps every write in memory until it is fsynced. Each cycle cuts
// the power under load (everything unsynced is dropped, the server is
// SIGKILLed), mounts what was durable and restarts the server on it. A
// SIGKILL alone leaves the kernel's page cache, so the crash harness
// cannot tell a commit that reached the disk from one that reached only
// the cache; this one can (TestPowerCutHarnessCatchesSynchronousNormal).
//
// FENCEVIEW_POWERCUT_CYCLES sets the number of cuts (default 10);
// FENCEVIEW_POWERCUT_SEED replays a run.
func TestPowerCutHarness(t *testing.T) {
	powerCutTest(t)
	cycles, seed := processHarness(t, "FENCEVIEW_POWERCUT_CYCLES", 10, "FENCEVIEW_POWERCUT_SEED")
	h := newPowerCuts(t, servertest.Binary(t))
	start := time.Now()
	if cycle, err := h.run(cycles, rand.New(rand.NewPCG(seed, seed))); err != nil {
		t.Fatalf("after power cut %d: %v", cycle, err)
	}
	t.Logf("%d acknowledged grants and accepted writes checked across %d power cuts, %v per cut",
		h.load.acknowledged, cycles, time.Since(start)/time.Duration(max(cycles, 1)))
}

// powerCutTest skips the test in -short (a processTest) and where FUSE,
// which the powercut filesystem needs, is not usable.
func powerCutTest(t *testing.T) {
	t.Helper()
	processTest(t)
	powercut.Require(t)
}

// The harness is not blind: a server built to commit with SQLite's
// synchronous=NORMAL, which answers before its WAL is fsynced (and which
// the crash harness passes), loses acknowledged grants at a power cut, and
// the harness says so.
func TestPowerCutHarnessCatchesSynchronousNormal(t *testing.T) {
	powerCutTest(t)
	bin := servertest.Build(t, "github.com/fenceview/fenceview/cmd/fenceview", "-tags", "fenceview_unsafe_synchronous_normal")
	h := newPowerCuts(t, bin)
	// Each cut loses the commits since the last checkpoint: the first
	// almost always finds some; ten in a row finding none is a blind
	// harness.
	seed := envSeed(t, "FENCEVIEW_POWERCUT_SEED")
	cycle, err := h.run(10, rand.New(rand.NewPCG(seed, seed)))
	if err == nil {
		t.Fatalf("10 power cuts of a synchronous=NORMAL server, %d acknowledged operations, and nothing lost: the harness cannot see a lost commit", h.load.acknowledged)
	}
	t.Logf("synchronous=NORMAL caught at power cut %d: %v", cycle, err)
}

// powerCuts runs a server binary on a powercut filesystem.
type powerCuts struct {
	*powercut.Disk
	t        *testing.T
	bin      string
	load     *crashLoad
	requests int // acknowledged operations before each cut: 1 + rng.IntN(requests)
}

func newPowerCuts(t *testing.T, bin string) *powerCuts {
	return &powerCuts{Disk: powercut.NewDisk(t), t: t, bin: bin, load: newCrashLoad(), requests: 300}
}

func (h *powerCuts) db() string { return filepath.Join(h.Mnt, "fenceview.db") }

// cut cuts the power under the server p: nothing unsynced survives, and it
// is killed, as the power would; then the mount goes.
func (h *powerCuts) cut(p *servertest.Process) {
	h.t.Helper()
	h.FS.Cut()
	p.Kill()
	h.Unmount()
}

// run starts the server cycles+1 times on the same database, cutting the
// power under load in between, and checks after each restart that nothing
// acknowledged was lost. It returns the first broken promise and the cut
// after which it was found.
func (h *powerCuts) run(cycles int, rng *rand.Rand) (int, error) {
	for cycle := 0; cycle <= cycles; cycle++ {
		h.Mount(powercut.Options{})
		p, err := servertest.LaunchProcess(h.t, servertest.ProcessOptions{Binary: h.bin, DBPath: h.db()})
		if err != nil {
			h.t.Fatalf("start after power cut %d: %v", cycle, err)
		}
		if err := h.load.check(h.t, p.URL); err != nil {
			return cycle, err
		}
		if cycle == cycles {
			h.cut(p)
			break
		}
		h.load.run(p.URL, rng.Uint64(), 1+rng.IntN(h.requests), func() { h.cut(p) })
	}
	return cycles, nil
}

// A first start cut at any of its syncs: the database it leaves is either
// none at all or one with the issuer and signing key the next start keeps;
// a first start that got as far as listening keeps its identity.
//
// Every sync of an uncut first start is cut at in turn (a sync is where the
// durable state changes, so this visits every state the disk can be left
// in); FENCEVIEW_POWERCUT_FIRST_STARTS=n cuts at n evenly spread syncs
// only.
func TestPowerCutDuringFirstStart(t *testing.T) {
	powerCutTest(t)
	bin := servertest.Binary(t)

	h := newPowerCuts(t, bin)
	h.Mount(powercut.Options{})
	p, err := servertest.LaunchProcess(t, servertest.ProcessOptions{Binary: bin, DBPath: h.db()})
	if err != nil {
		t.Fatal(err)
	}
	syncs := h.FS.Syncs()
	h.cut(p)
	points := syncs + 1 // the last: a cut after the first start's last sync
	if n := envInt(t, "FENCEVIEW_POWERCUT_FIRST_STARTS", points); n < points {
		points = n
	}
	t.Logf("an uncut first start syncs %d times; cutting at %d of them", syncs, points)
	start := time.Now()
	for i := 0; i < points; i++ {
		at := 1 + i*syncs/max(points-1, 1)
		h := newPowerCuts(t, bin)
		h.Mount(powercut.Options{CutAtSync: at})
		first, err := servertest.LaunchProcess(t, servertest.ProcessOptions{Binary: bin, DBPath: h.db()})
		var firstID serverIdentity
		if err == nil {
			firstID = identityOf(t, first.URL)
		}
		h.cut(first)

		disk := h.durableIdentity()
		switch {
		case err == nil && disk != firstID:
			t.Fatalf("cut at sync %d of %d, after the first start listened as %v: the disk holds %v", at, syncs, firstID, disk)
		case disk.exists && (disk.Issuer == "" || disk.Keys == ""):
			t.Fatalf("cut at sync %d of %d: the disk holds a database without its identity: %v", at, syncs, disk)
		}

		h.Mount(powercut.Options{})
		next, err := servertest.LaunchProcess(t, servertest.ProcessOptions{Binary: bin, DBPath: h.db()})
		if err != nil {
			t.Fatalf("cut at sync %d of %d: the next start: %v", at, syncs, err)
		}
		if got := identityOf(t, next.URL); disk.exists && got != disk {
			t.Fatalf("cut at sync %d of %d: the disk held %v, the next start is %v", at, syncs, disk, got)
		}
		h.cut(next)
	}
	t.Logf("%d cut first starts, %v each", points, time.Since(start)/time.Duration(points))
}

// serverIdentity is what a guard knows a server by: its issuer id and its
// signing keys' ids.
type serverIdentity struct {
	exists bool // a database was found (durableIdentity only)
	Issuer string
	Keys   string // the key ids, sorted, comma-separated
}

func identityOf(t *testing.T, url string) serverIdentity {
	t.Helper()
	r := doRequest(t, "GET", url+"/v1/signing-keys", nil)
	var ids []string
	keys, _ := r.Body["keys"].([]any)
	for _, k := range keys {
		k, _ := k.(map[string]any)
		id, _ := k["keyId"].(string)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	issuer, _ := r.Body["issuer"].(string)
	return serverIdentity{exists: true, Issuer: issuer, Keys: strings.Join(ids, ",")}
}

// durableIdentity reads what the backing directory holds, as the next
// start will: from a copy (opening it may roll back a hot journal or
// replay the WAL), through SQLite itself.
func (h *powerCuts) durableIdentity() serverIdentity {
	h.t.Helper()
	if _, err := os.Stat(filepath.Join(h.Backing, "fenceview.db")); errors.Is(err, os.ErrNotExist) {
		return serverIdentity{}
	}
	dir := h.t.TempDir()
	for _, suffix := range []string{"", "-wal", "-journal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(h.Backing, "fenceview.db"+suffix))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "fenceview.db"+suffix), b, 0o600); err != nil {
			h.t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "fenceview.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	id := serverIdentity{exists: true}
	// Missing tables read as an empty identity: a database cut before its
	// migrations.
	db.QueryRow(`SELECT value FROM meta WHERE key = 'issuer'`).Scan(&id.Issuer)
	db.QueryRow(`SELECT COALESCE(group_concat(key_id, ','), '') FROM (SELECT key_id FROM signing_keys ORDER BY key_id)`).Scan(&id.Keys)
	return id
}
