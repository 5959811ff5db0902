// Package powercut is a FUSE filesystem that can lose power: a view of a
// backing directory that keeps every change in memory until it is synced,
// so that a simulated power cut loses exactly what a real one may lose.
//
// A SIGKILL leaves the kernel's page cache alone: a program that wrote but
// never fsynced looks, after a kill and a restart, just as durable as one
// that did. Under this filesystem it does not. The backing directory holds
// only what was made durable, and what the mount shows beyond that lives in
// this process's memory, gone at Cut or Unmount. (LazyFS, from the
// University of Minho and INESC TEC, does the same for files' data; this
// one also keeps directory entries volatile.)
//
// The durability rules it models are POSIX's (fsync(2), and the Linux man
// page's note on directories), taken at their strictest:
//
//   - Data written to a file (write, truncate, fallocate) is durable only
//     once the file is fsynced or fdatasynced, through any of its
//     descriptors. A sync makes all of the file's data durable at once: it
//     models neither torn writes nor a disk that persists some unsynced
//     writes and not others.
//   - A directory entry (a created file or directory, an unlink, a rmdir,
//     either side of a rename) is durable only once its directory is
//     fsynced. An fsync of a file does not make its name durable: a file
//     created, written and fsynced, but whose directory was not, is gone
//     after a cut. Its synced data is kept, though, and lands under the
//     name a later directory fsync makes durable.
//   - A power cut drops everything unsynced: every file reads as of its
//     last sync, every directory as of its last directory fsync. From the
//     cut on, every operation fails with EIO, so nothing a program does
//     after it can look durable to that program.
//
// Metadata other than names and sizes (modes, times, owners) is kept in
// memory and not modelled. It has no hard links, symlinks or device nodes,
// and directories cannot be renamed (EXDEV: mv copies instead), which keeps
// every directory at one place in the backing directory; SQLite needs none
// of these. Locks (fcntl, flock) are the kernel's, local to the mount.
package powercut

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Options configure a mount.
type Options struct {
	// CutAtSync, if positive, cuts the power as the CutAtSync-th sync
	// (counting fsyncs and fdatasyncs of files and fsyncs of directories
	// from 1) begins: that sync fails and makes nothing durable, and so
	// does everything after it. The backing directory is left as the
	// syncs before it made it: stepping it from 1 to Syncs() of an uncut
	// run visits every state the disk can be in after a cut.
	CutAtSync int
}

// FS is a mounted powercut filesystem.
type FS struct {
	mu        sync.Mutex // guards everything below and every node
	backing   string
	server    *fuse.Server
	syncs     int
	cutAtSync int
	cut       bool
}

// Mount mounts at mountpoint a view of the backing directory, which must
// hold only regular files and directories, and serves it until Unmount.
// Mounting needs /dev/fuse and either root or fusermount3.
func Mount(backing, mountpoint string, opts Options) (*FS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	f := &FS{backing: backing, cutAtSync: opts.CutAtSync}
	root := &dir{fsys: f, mode: 0o755, onDisk: true, durable: map[string]node{}}
	if err := f.load(root); err != nil {
		return nil, err
	}
	f.server, err = fs.Mount(mountpoint, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "powercut", Name: "powercut",
			DirectMount:   true, // as root, mount(2) itself; else fusermount3
			DisableXAttrs: true,
		},
		OnAdd: func(ctx context.Context) { root.addLoaded(ctx) },
	})
	if err != nil {
		return nil, fmt.Errorf("powercut: mount %s: %w", mountpoint, err)
	}
	return f, nil
}

// Cut cuts the power now: whatever was not synced will never reach the
// backing directory, and every operation from now on fails with EIO.
// Unmount once the programs using the mount have stopped (a program kept
// running after a cut sees nothing but errors; kill it, as the power
// would).
func (f *FS) Cut() {
	f.mu.Lock()
	f.cut = true
	f.mu.Unlock()
}

// IsCut reports whether the power has been cut, by Cut or by CutAtSync.
func (f *FS) IsCut() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut
}

// Syncs returns how many syncs have begun, the one CutAtSync cut at
// included.
func (f *FS) Syncs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// Unmount cuts the power (Unmount never writes what was not synced, so
// the backing directory holds exactly the durable state) and unmounts.
// No program may still have a file of the mount open.
func (f *FS) Unmount() error {
	f.Cut()
	return f.server.Unmount()
}

// node is a file or a directory.
type node interface {
	fs.InodeEmbedder
	// materialize writes the node's durable state at path in the backing
	// directory, its parent having just become durable there.
	materialize(path string) error
	unmaterialize()
}

// loc is a durable name of a file: an entry of a directory's durable
// state. A file has at most one volatile name (no hard links), but a
// rename across directories, with only one of them synced, can leave it
// with two durable ones, or none.
type loc struct {
	d    *dir
	name string
}

// A file's data is tracked in pages: a sync writes the dirty ones.
const pageSize = 4096

type file struct {
	fs.Inode
	fsys   *FS
	data   []byte             // what reads see
	synced []byte             // the durable data: what every durable name holds on disk
	dirty  map[int64]struct{} // pages of data that differ from synced
	locs   map[loc]struct{}
	mode   uint32
	mtime  time.Time
}

type dir struct {
	fs.Inode
	fsys *FS
	path string // relative to the backing directory; fixed, as directories are not renamed
	mode uint32
	// durable is what this directory held at its last fsync. A directory
	// not durable itself (onDisk false) still has one, for the day its
	// parent is synced.
	durable map[string]node
	onDisk  bool // the backing directory has it, at path
	loaded  map[string]node
}

var (
	_ fs.NodeGetattrer = (*file)(nil)
	_ fs.NodeSetattrer = (*file)(nil)
	_ fs.NodeOpener    = (*file)(nil)
	_ fs.NodeReader    = (*file)(nil)
	_ fs.NodeWriter    = (*file)(nil)
	_ fs.NodeFsyncer   = (*file)(nil)
	_ fs.NodeFlusher   = (*file)(nil)
	_ fs.NodeAllocater = (*file)(nil)

	_ fs.NodeGetattrer = (*dir)(nil)
	_ fs.NodeSetattrer = (*dir)(nil)
	_ fs.NodeCreater   = (*dir)(nil)
	_ fs.NodeMkdirer   = (*dir)(nil)
	_ fs.NodeUnlinker  = (*dir)(nil)
	_ fs.NodeRmdirer   = (*dir)(nil)
	_ fs.NodeRenamer   = (*dir)(nil)
	_ fs.NodeFsyncer   = (*dir)(nil)
)

// load reads the backing directory into memory: at mount, what is on
// disk is all there is, and all of it durable.
func (f *FS) load(d *dir) error {
	entries, err := os.ReadDir(filepath.Join(f.backing, d.path))
	if err != nil {
		return err
	}
	d.loaded = map[string]node{}
	for _, e := range entries {
		rel := filepath.Join(d.path, e.Name())
		switch {
		case e.Type().IsRegular():
			b, err := os.ReadFile(filepath.Join(f.backing, rel))
			if err != nil {
				return err
			}
			fl := &file{fsys: f, data: b, synced: slices.Clone(b), dirty: map[int64]struct{}{},
				locs: map[loc]struct{}{{d, e.Name()}: {}}, mode: 0o644, mtime: time.Now()}
			d.loaded[e.Name()], d.durable[e.Name()] = fl, fl
		case e.IsDir():
			sub := &dir{fsys: f, path: rel, mode: 0o755, onDisk: true, durable: map[string]node{}}
			if err := f.load(sub); err != nil {
				return err
			}
			d.loaded[e.Name()], d.durable[e.Name()] = sub, sub
		default:
			return fmt.Errorf("powercut: %s: only regular files and directories are supported", rel)
		}
	}
	return nil
}

// addLoaded builds the inode tree of what load read.
func (d *dir) addLoaded(ctx context.Context) {
	for name, n := range d.loaded {
		mode := uint32(syscall.S_IFREG)
		if sub, ok := n.(*dir); ok {
			mode = syscall.S_IFDIR
			defer sub.addLoaded(ctx)
		}
		d.AddChild(name, d.NewPersistentInode(ctx, n, fs.StableAttr{Mode: mode}), false)
	}
	d.loaded = nil
}

// live fails every operation once the power is out. Called under mu.
func (f *FS) live() syscall.Errno {
	if f.cut {
		return syscall.EIO
	}
	return 0
}

// attrs answers a Getattr (set nil) or a Setattr of a file or a
// directory: under mu, EIO once the power is out, else set applied and the
// node's attributes, by fill, in out.
func (f *FS) attrs(out *fuse.AttrOut, set func(), fill func(*fuse.Attr)) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.live(); e != 0 {
		return e
	}
	if set != nil {
		set()
	}
	fill(&out.Attr)
	return 0
}

// beginSync counts a sync and cuts the power if it is the one to cut at.
// Called under mu.
func (f *FS) beginSync() syscall.Errno {
	if f.cut {
		return syscall.EIO
	}
	f.syncs++
	if f.cutAtSync > 0 && f.syncs >= f.cutAtSync {
		f.cut = true
		return syscall.EIO
	}
	return 0
}

// ioErr turns a failure of the backing directory into EIO: the disk broke.
func ioErr(err error) syscall.Errno {
	if err != nil {
		return syscall.EIO
	}
	return 0
}

// --- files ---

func (fl *file) attr(out *fuse.Attr) {
	out.Mode = syscall.S_IFREG | fl.mode
	out.Size = uint64(len(fl.data))
	out.Blocks = (out.Size + 511) / 512
	out.Nlink = 1
	out.SetTimes(nil, &fl.mtime, &fl.mtime)
}

func (fl *file) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return fl.fsys.attrs(out, nil, fl.attr)
}

func (fl *file) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return fl.fsys.attrs(out, func() {
		if size, ok := in.GetSize(); ok {
			fl.resize(int64(size))
		}
		if mode, ok := in.GetMode(); ok {
			fl.mode = mode & 0o7777
		}
		if mtime, ok := in.GetMTime(); ok {
			fl.mtime = mtime
		}
	}, fl.attr)
}

// resize changes the file's length: the pages between the old and the new
// end are dirty (a file shrunk and grown back must sync as zeros there).
func (fl *file) resize(size int64) {
	old := int64(len(fl.data))
	switch {
	case size < old:
		fl.data = fl.data[:size]
		fl.markDirty(size, size)
	case size > old:
		fl.data = append(fl.data, make([]byte, size-old)...)
		fl.markDirty(old, size)
	}
	fl.mtime = time.Now()
}

// markDirty marks the pages holding bytes [from, to) dirty, and the page of
// from itself when the range is empty (a truncation point).
func (fl *file) markDirty(from, to int64) {
	for p := from / pageSize; p == from/pageSize || p*pageSize < to; p++ {
		fl.dirty[p] = struct{}{}
	}
}

func (fl *file) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fl.fsys.mu.Lock()
	defer fl.fsys.mu.Unlock()
	if e := fl.fsys.live(); e != 0 {
		return nil, 0, e
	}
	if flags&syscall.O_TRUNC != 0 {
		fl.resize(0)
	}
	return nil, 0, 0
}

func (fl *file) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	fl.fsys.mu.Lock()
	defer fl.fsys.mu.Unlock()
	if e := fl.fsys.live(); e != 0 {
		return nil, e
	}
	if off >= int64(len(fl.data)) {
		return fuse.ReadResultData(nil), 0
	}
	n := copy(dest, fl.data[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (fl *file) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	fl.fsys.mu.Lock()
	defer fl.fsys.mu.Unlock()
	if e := fl.fsys.live(); e != 0 {
		return 0, e
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	end := off + int64(len(data))
	if end > int64(len(fl.data)) {
		fl.resize(end)
	}
	copy(fl.data[off:], data)
	if len(data) > 0 {
		fl.markDirty(off, end)
	}
	fl.mtime = time.Now()
	return uint32(len(data)), 0
}

func (fl *file) Allocate(ctx context.Context, fh fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	fl.fsys.mu.Lock()
	defer fl.fsys.mu.Unlock()
	if e := fl.fsys.live(); e != 0 {
		return e
	}
	if mode&^uint32(1) != 0 { // FALLOC_FL_KEEP_SIZE alone; no punching holes
		return syscall.EOPNOTSUPP
	}
	if end := int64(off + size); mode == 0 && end > int64(len(fl.data)) {
		fl.resize(end)
	}
	return 0
}

// Flush (close) makes nothing durable: close(2) is not a sync.
func (fl *file) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }

// Fsync makes the file's data durable under each of its durable names.
func (fl *file) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	fl.fsys.mu.Lock()
	defer fl.fsys.mu.Unlock()
	if e := fl.fsys.beginSync(); e != 0 {
		return e
	}
	return ioErr(fl.sync())
}

// sync copies the dirty pages into synced and onto the backing file of
// every durable name whose directory is on disk.
func (fl *file) sync() error {
	size := int64(len(fl.data))
	if int64(len(fl.synced)) > size {
		fl.synced = fl.synced[:size]
	} else {
		fl.synced = append(fl.synced, make([]byte, size-int64(len(fl.synced)))...)
	}
	pages := make([]int64, 0, len(fl.dirty))
	for p := range fl.dirty {
		if p*pageSize < size {
			pages = append(pages, p)
		}
	}
	slices.Sort(pages)
	for _, p := range pages {
		copy(fl.synced[p*pageSize:min((p+1)*pageSize, size)], fl.data[p*pageSize:])
	}
	clear(fl.dirty)
	for l := range fl.locs {
		if !l.d.onDisk {
			continue
		}
		if err := fl.writePages(filepath.Join(fl.fsys.backing, l.d.path, l.name), pages); err != nil {
			return err
		}
	}
	return nil
}

// writePages writes the given pages (sorted) of synced to the backing file
// at path, runs of neighbours at once, and cuts it to synced's length.
func (fl *file) writePages(path string, pages []int64) error {
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	size := int64(len(fl.synced))
	for i := 0; i < len(pages); {
		j := i + 1
		for j < len(pages) && pages[j] == pages[j-1]+1 {
			j++
		}
		from, to := pages[i]*pageSize, min((pages[j-1]+1)*pageSize, size)
		if _, err := w.WriteAt(fl.synced[from:to], from); err != nil {
			return err
		}
		i = j
	}
	if err := w.Truncate(size); err != nil {
		return err
	}
	return w.Close()
}

func (fl *file) materialize(path string) error {
	return os.WriteFile(filepath.Join(fl.fsys.backing, path), fl.synced, 0o644)
}

func (fl *file) unmaterialize() {}

// --- directories ---

func (d *dir) attr(out *fuse.Attr) {
	out.Mode = syscall.S_IFDIR | d.mode
	out.Nlink = 2
}

func (d *dir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return d.fsys.attrs(out, nil, d.attr)
}

func (d *dir) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return d.fsys.attrs(out, func() {
		if mode, ok := in.GetMode(); ok {
			d.mode = mode & 0o7777
		}
	}, d.attr)
}

func (d *dir) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	if e := d.fsys.live(); e != 0 {
		return nil, nil, 0, e
	}
	if d.GetChild(name) != nil {
		return nil, nil, 0, syscall.EEXIST
	}
	fl := &file{fsys: d.fsys, dirty: map[int64]struct{}{}, locs: map[loc]struct{}{}, mode: mode & 0o7777, mtime: time.Now()}
	fl.attr(&out.Attr)
	return d.NewPersistentInode(ctx, fl, fs.StableAttr{Mode: syscall.S_IFREG}), nil, 0, 0
}

func (d *dir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	if e := d.fsys.live(); e != 0 {
		return nil, e
	}
	if d.GetChild(name) != nil {
		return nil, syscall.EEXIST
	}
	sub := &dir{fsys: d.fsys, path: filepath.Join(d.path, name), mode: mode & 0o7777, durable: map[string]node{}}
	sub.attr(&out.Attr)
	return d.NewPersistentInode(ctx, sub, fs.StableAttr{Mode: syscall.S_IFDIR}), 0
}

// Unlink and Rmdir change only the volatile tree (the bridge removes the
// child once they return 0); the backing directory changes at the next
// fsync of d.
func (d *dir) Unlink(ctx context.Context, name string) syscall.Errno {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	return d.fsys.live()
}

func (d *dir) Rmdir(ctx context.Context, name string) syscall.Errno {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	if e := d.fsys.live(); e != 0 {
		return e
	}
	if ch := d.GetChild(name); ch != nil && len(ch.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	return 0
}

// Rename moves a file (the bridge moves the child once it returns 0).
func (d *dir) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	if e := d.fsys.live(); e != 0 {
		return e
	}
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if ch.IsDir() {
		return syscall.EXDEV
	}
	if _, ok := newParent.(*dir); !ok {
		return syscall.EXDEV
	}
	target := newParent.EmbeddedInode().GetChild(newName)
	switch {
	case flags&^unix.RENAME_NOREPLACE != 0: // RENAME_EXCHANGE, RENAME_WHITEOUT
		return syscall.EINVAL
	case flags&unix.RENAME_NOREPLACE != 0 && target != nil:
		return syscall.EEXIST
	case target != nil && target.IsDir():
		return syscall.EISDIR
	}
	return 0
}

// Fsync of a directory makes its entries durable: the backing directory
// gets what the mount shows in it now, names pointing to each file's
// synced data (not its current data: that needs an fsync of the file).
func (d *dir) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	d.fsys.mu.Lock()
	defer d.fsys.mu.Unlock()
	if e := d.fsys.beginSync(); e != 0 {
		return e
	}
	now := map[string]node{}
	for name, ch := range d.Children() {
		if n, ok := ch.Operations().(node); ok {
			now[name] = n
		}
	}
	var errs []error
	for name, was := range d.durable {
		if now[name] == was {
			continue
		}
		delete(d.durable, name)
		switch was := was.(type) {
		case *file:
			delete(was.locs, loc{d, name})
		case *dir:
			was.unmaterialize()
		}
		if d.onDisk {
			errs = append(errs, os.RemoveAll(filepath.Join(d.fsys.backing, d.path, name)))
		}
	}
	for name, n := range now {
		if _, ok := d.durable[name]; ok {
			continue
		}
		d.durable[name] = n
		if fl, ok := n.(*file); ok {
			fl.locs[loc{d, name}] = struct{}{}
		}
		if d.onDisk {
			errs = append(errs, n.materialize(filepath.Join(d.path, name)))
		}
	}
	return ioErr(errors.Join(errs...))
}

// materialize creates the directory in the backing directory with its
// durable entries: a directory synced before its parent was.
func (d *dir) materialize(path string) error {
	if err := os.Mkdir(filepath.Join(d.fsys.backing, path), 0o755); err != nil {
		return err
	}
	d.onDisk = true
	for name, n := range d.durable {
		if err := n.materialize(filepath.Join(path, name)); err != nil {
			return err
		}
	}
	return nil
}

// unmaterialize records that the directory left the backing directory
// (its parent's fsync removed it, entries and all).
func (d *dir) unmaterialize() {
	d.onDisk = false
	for _, n := range d.durable {
		n.unmaterialize()
	}
}
