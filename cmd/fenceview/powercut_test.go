package main

import (
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/powercut"
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
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	powercut.Require(t)
	cycles := envInt(t, "FENCEVIEW_POWERCUT_CYCLES", 10)
	seed := uint64(envInt(t, "FENCEVIEW_POWERCUT_SEED", int(time.Now().UnixNano()&0xffffffff)))
	t.Logf("%d cycles, FENCEVIEW_POWERCUT_SEED=%d", cycles, seed)
	h := newPowerCuts(t, serverBinary(t))
	start := time.Now()
	if cycle, err := h.run(cycles, rand.New(rand.NewPCG(seed, seed))); err != nil {
		t.Fatalf("after power cut %d: %v", cycle, err)
	}
	t.Logf("%d acknowledged grants and accepted writes checked across %d power cuts, %v per cut",
		h.load.acknowledged, cycles, time.Since(start)/time.Duration(max(cycles, 1)))
}

// The harness is not blind: a server built to commit with SQLite's
// synchronous=NORMAL, which answers before its WAL is fsynced (and which
// the crash harness passes), loses acknowledged grants at a power cut, and
// the harness says so.
func TestPowerCutHarnessCatchesSynchronousNormal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills real processes")
	}
	powercut.Require(t)
	bin := buildTool(t, "github.com/fenceview/fenceview/cmd/fenceview", "-tags", "fenceview_unsafe_synchronous_normal")
	h := newPowerCuts(t, bin)
	// Each cut loses the commits since the last checkpoint: the first
	// almost always finds some; ten in a row finding none is a blind
	// harness.
	rng := rand.New(rand.NewPCG(1, 1))
	cycle, err := h.run(10, rng)
	if err == nil {
		t.Fatalf("10 power cuts of a synchronous=NORMAL server, %d acknowledged operations, and nothing lost: the harness cannot see a lost commit", h.load.acknowledged)
	}
	t.Logf("synchronous=NORMAL caught at power cut %d: %v", cycle, err)
}

// powerCuts runs a server binary on a powercut filesystem.
type powerCuts struct {
	t        *testing.T
	bin      string
	backing  string // what survives a cut
	mnt      string
	fs       *powercut.FS
	load     *crashLoad
	requests int // acknowledged operations before each cut: 1 + rng.IntN(requests)
}

func newPowerCuts(t *testing.T, bin string) *powerCuts {
	return &powerCuts{t: t, bin: bin, backing: t.TempDir(), mnt: t.TempDir(), load: newCrashLoad(), requests: 300}
}

func (h *powerCuts) db() string { return filepath.Join(h.mnt, "fenceview.db") }

// mount mounts the backing directory, as a machine booting after a cut.
func (h *powerCuts) mount(opts powercut.Options) {
	h.t.Helper()
	fs, err := powercut.Mount(h.backing, h.mnt, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.fs = fs
	h.t.Cleanup(func() {
		if h.fs == fs {
			fs.Unmount()
		}
	})
}

// cut cuts the power under the server p: nothing unsynced survives, and it
// is killed, as the power would; then the mount goes.
func (h *powerCuts) cut(p *process) {
	h.t.Helper()
	h.fs.Cut()
	p.signal(syscall.SIGKILL)
	<-p.done
	if err := h.fs.Unmount(); err != nil {
		h.t.Fatal(err)
	}
	h.fs = nil
}

// run starts the server cycles+1 times on the same database, cutting the
// power under load in between, and checks after each restart that nothing
// acknowledged was lost. It returns the first broken promise and the cut
// after which it was found.
func (h *powerCuts) run(cycles int, rng *rand.Rand) (int, error) {
	for cycle := 0; cycle <= cycles; cycle++ {
		h.mount(powercut.Options{})
		p, err := launchProcess(h.t, h.bin, h.db())
		if err != nil {
			h.t.Fatalf("start after power cut %d: %v", cycle, err)
		}
		if err := h.load.check(h.t, p.url); err != nil {
			return cycle, err
		}
		if cycle == cycles {
			h.cut(p)
			break
		}
		h.load.run(p.url, rng.Uint64(), 1+rng.IntN(h.requests), func() { h.cut(p) })
	}
	return cycles, nil
}
