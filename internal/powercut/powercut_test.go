package powercut_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fenceview/fenceview/internal/powercut"
)

// disk is a powercut.Disk, mounted, with the file operations the tests
// make on it.
type disk struct {
	*powercut.Disk
	t *testing.T
}

func newDisk(t *testing.T) *disk {
	d := &disk{Disk: powercut.NewDisk(t), t: t}
	d.Mount(powercut.Options{})
	return d
}

// powerCut cuts the power, unmounts and mounts again, as a machine that
// lost power and rebooted.
func (d *disk) powerCut() {
	d.t.Helper()
	d.FS.Cut()
	d.Unmount()
	d.Mount(powercut.Options{})
}

func (d *disk) path(name string) string { return filepath.Join(d.Mnt, name) }

// write writes data to name in the mount, creating or truncating it, and
// fsyncs it when sync is set.
func (d *disk) write(name, data string, sync bool) {
	d.t.Helper()
	f, err := os.OpenFile(d.path(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		d.t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			d.t.Fatal(err)
		}
	}
}

// syncDir fsyncs the directory name of the mount ("" for its root).
func (d *disk) syncDir(name string) {
	d.t.Helper()
	f, err := os.Open(d.path(name))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		d.t.Fatal(err)
	}
}

// want checks that name reads as data, both in the backing directory and
// through the mount.
func (d *disk) want(name, data string) {
	d.t.Helper()
	for _, p := range d.both(name) {
		if b, err := os.ReadFile(p); err != nil {
			d.t.Errorf("%s: %v, want %q", p, err, data)
		} else if string(b) != data {
			d.t.Errorf("%s = %q, want %q", p, b, data)
		}
	}
}

// wantGone checks that name exists neither in the backing directory nor
// through the mount.
func (d *disk) wantGone(name string) {
	d.t.Helper()
	for _, p := range d.both(name) {
		if b, err := os.ReadFile(p); !errors.Is(err, os.ErrNotExist) {
			d.t.Errorf("%s: exists (%q, %v), should not", p, b, err)
		}
	}
}

// both is name in the backing directory and through the mount.
func (d *disk) both(name string) []string {
	return []string{filepath.Join(d.Backing, name), d.path(name)}
}

// Written but not synced: the mount shows it until the cut, after which
// the file is as it was at its last fsync.
func TestUnsyncedWritesAreLost(t *testing.T) {
	d := newDisk(t)
	d.write("f", "synced", true)
	d.syncDir("")
	d.write("f", "written, not synced", false)
	if b, _ := os.ReadFile(d.path("f")); string(b) != "written, not synced" {
		t.Fatalf("before the cut the mount reads %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Backing, "f")); string(b) != "synced" {
		t.Fatalf("an unsynced write reached the backing directory: %q", b)
	}
	d.powerCut()
	d.want("f", "synced")
}

// fsync and fdatasync both keep everything written before them, pages and
// size, and nothing written after.
func TestSyncedWritesAreKept(t *testing.T) {
	for _, sync := range []struct {
		name string
		do   func(*os.File) error
	}{
		{"fsync", (*os.File).Sync},
		{"fdatasync", func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }},
	} {
		t.Run(sync.name, func(t *testing.T) {
			d := newDisk(t)
			f, err := os.Create(d.path("f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d.syncDir("")
			big := make([]byte, 3*4096+100) // several pages, a partial last one
			for i := range big {
				big[i] = byte('a' + i%26)
			}
			f.Write(big)
			f.WriteAt([]byte("HOLE"), 20000) // grows the file past a hole of zeros
			if err := sync.do(f); err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("lost"), 0)
			f.Truncate(10)
			f.Close()
			want := string(big) + string(make([]byte, 20000-len(big))) + "HOLE"
			d.powerCut()
			d.want("f", want)
		})
	}
}

// A truncation is data like any write: synced, it stays; the bytes of a
// shrunk and regrown file are zeros, not what was there before.
func TestTruncationIsSyncedLikeData(t *testing.T) {
	d := newDisk(t)
	d.write("f", "0123456789", true)
	d.syncDir("")
	f, err := os.OpenFile(d.path("f"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(4)
	f.Truncate(8)
	f.Sync()
	f.Close()
	d.powerCut()
	d.want("f", "0123\x00\x00\x00\x00")
}

// A new file's name is durable only once its directory is fsynced; the
// file's own fsync keeps its data, which a later directory fsync brings
// along.
func TestNewFileNeedsItsDirectorySynced(t *testing.T) {
	d := newDisk(t)
	d.write("named", "kept", true)
	d.syncDir("")
	d.write("unnamed", "data synced, name not", true)
	d.write("late", "synced before its name", true)
	d.powerCut()
	d.want("named", "kept")
	d.wantGone("unnamed")
	d.wantGone("late")

	d.write("late", "synced before its name", true)
	d.write("late", "then more, not synced", false)
	d.syncDir("")
	d.write("empty", "never synced", false)
	d.syncDir("")
	d.powerCut()
	d.want("late", "synced before its name")
	d.want("empty", "") // the name made durable, the data never
}

// rename(2) over an existing file, the way programs replace a file
// atomically: until the directory is fsynced, a cut brings back the old
// file; after, the new one, with its synced data.
func TestRenameIsDurableOnlyAfterDirectorySync(t *testing.T) {
	for _, syncDir := range []bool{false, true} {
		d := newDisk(t)
		d.write("config", "v1", true)
		d.syncDir("")
		d.write("config.tmp", "v2", true)
		if err := os.Rename(d.path("config.tmp"), d.path("config")); err != nil {
			t.Fatal(err)
		}
		d.wantGone("config.tmp")
		if syncDir {
			d.syncDir("")
		}
		d.powerCut()
		if syncDir {
			d.want("config", "v2")
		} else {
			d.want("config", "v1")
		}
		d.wantGone("config.tmp")
	}
}

// A rename between directories is two directory entries: each becomes
// durable with its own directory's fsync, so syncing only the target
// leaves the file under both names.
func TestRenameAcrossDirectoriesIsTwoEntries(t *testing.T) {
	d := newDisk(t)
	for _, sub := range []string{"a", "b"} {
		if err := os.Mkdir(d.path(sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d.syncDir("")
	d.write("a/f", "data", true)
	d.syncDir("a")
	if err := os.Rename(d.path("a/f"), d.path("b/f")); err != nil {
		t.Fatal(err)
	}
	d.syncDir("b")
	d.powerCut()
	d.want("a/f", "data")
	d.want("b/f", "data")
}

// An unlink is undone by a cut until the directory is fsynced.
func TestUnlinkIsDurableOnlyAfterDirectorySync(t *testing.T) {
	d := newDisk(t)
	d.write("f", "data", true)
	d.write("g", "data", true)
	d.syncDir("")
	os.Remove(d.path("f"))
	os.Remove(d.path("g"))
	d.powerCut()
	d.want("f", "data")
	d.want("g", "data")
	os.Remove(d.path("f"))
	d.syncDir("")
	d.powerCut()
	d.wantGone("f")
	d.want("g", "data")
}

// A directory made and synced, files and all, is still lost while its
// parent is not synced; once it is, everything synced inside comes back.
func TestNewDirectoryNeedsItsParentSynced(t *testing.T) {
	d := newDisk(t)
	os.Mkdir(d.path("sub"), 0o755)
	d.write("sub/f", "data", true)
	d.syncDir("sub")
	d.powerCut()
	d.wantGone("sub")

	os.Mkdir(d.path("sub"), 0o755)
	d.write("sub/f", "data", true)
	d.syncDir("sub")
	d.syncDir("")
	d.powerCut()
	d.want("sub/f", "data")
}

// CutAtSync cuts the power as a given sync begins: it and everything
// after it fail with EIO, and the disk is as the syncs before it left it.
func TestCutAtSync(t *testing.T) {
	d := newDisk(t)
	d.Unmount()
	d.Mount(powercut.Options{CutAtSync: 3})
	d.write("f", "first", true) // sync 1
	d.syncDir("")               // sync 2
	f, err := os.OpenFile(d.path("f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteAt([]byte("SECOND"), 0)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) { // sync 3: the power goes
		t.Fatalf("the sync at the cut: %v, want EIO", err)
	}
	if !d.FS.IsCut() || d.FS.Syncs() != 3 {
		t.Fatalf("cut %v after %d syncs", d.FS.IsCut(), d.FS.Syncs())
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a write after the cut: %v, want EIO", err)
	}
	f.Close()
	d.powerCut()
	d.want("f", "first")
}
