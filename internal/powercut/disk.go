package powercut

import "testing"

// Disk is, for a test, a machine's disk across power cuts and boots: a
// backing directory (what a cut leaves) and the mount over it, one mount
// at a time.
type Disk struct {
	t       testing.TB
	Backing string // what survives a cut
	Mnt     string // where the disk is mounted
	FS      *FS    // the mount; nil while unmounted
}

// NewDisk needs what Require does (it skips, or under CI fails, t without
// it) and returns a disk of two new temporary directories, not mounted.
func NewDisk(t testing.TB) *Disk {
	t.Helper()
	Require(t)
	return &Disk{t: t, Backing: t.TempDir(), Mnt: t.TempDir()}
}

// Mount mounts the backing directory with opts, as a machine booting; the
// mount goes when the test ends, unless Unmount took it first.
func (d *Disk) Mount(opts Options) {
	d.t.Helper()
	fs, err := Mount(d.Backing, d.Mnt, opts)
	if err != nil {
		d.t.Fatal(err)
	}
	d.FS = fs
	d.t.Cleanup(func() {
		if d.FS == fs {
			fs.Unmount()
		}
	})
}

// Unmount takes the mount away; after a Cut, the kernel's cache of what
// it showed goes with it.
func (d *Disk) Unmount() {
	d.t.Helper()
	if err := d.FS.Unmount(); err != nil {
		d.t.Fatal(err)
	}
	d.FS = nil
}
