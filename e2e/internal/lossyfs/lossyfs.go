//go:build !(arm || 386 || mips || mipsle)

// go-fuse (github.com/hanwen/go-fuse/v2/splice) does not compile on 32-bit
// platforms (syscall.Splice returns int there): the power-cut suite and
// its file system are built on 64-bit platforms only.

// Package lossyfs is a FUSE file system for power-cut tests: it is held in
// memory and, on Cut, throws away everything that was not fsynced, like a
// disk whose volatile write cache is lost when the power goes.
//
// The durability model ("not fsynced = gone"):
//   - Each regular file has its current contents and its contents as of its
//     last fsync or fdatasync (the two are the same here). A cut puts every
//     file back to those synced contents; writes, truncations and
//     extensions after the last fsync are lost, all of them, never part.
//   - A new file exists after a cut only if it was made durable: fsynced
//     itself, or its directory fsynced after it was created. A file made
//     durable by a directory fsync alone comes back empty.
//   - Unlink, rename, mkdir and rmdir are durable at once (the model is
//     strict about data and about creation, not about every namespace
//     change). A renamed file keeps its synced contents and durability.
//   - File modes, owners and times are not tracked across a cut.
//
// Owners are kept (a new file or directory belongs to its creator, chown
// works) and go-fuse checks access(2) against them; the kernel itself
// checks no permissions (no default_permissions). MountWith's AllowOther
// lets other users than root use the mount, such as a service's dynamic
// user.
//
// Byte-range (fcntl) and flock locks are left to the kernel, which keeps
// them locally when the file system does not ask to handle them; mmap of a
// file works through the page cache (no direct I/O), which SQLite's -shm
// file needs. The page cache is dropped at each open (no FOPEN_KEEP_CACHE)
// and entries and attributes are not cached, so a process that opens a
// file after Cut sees the rolled-back contents.
//
// HoldSyncs makes it a disk that stops completing cache flushes: every
// fsync and fdatasync waits, until ReleaseSyncs, while reads and writes go
// on. A process killed meanwhile is not held: its fsync fails with EINTR.
package lossyfs

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted lossy file system.
type FS struct {
	// Dir is the mount point.
	Dir string

	server *fuse.Server
	root   *dirNode
	gate   *syncGate
}

// Options are the mount's options.
type Options struct {
	// AllowOther lets users other than the one who mounted (root) use
	// the file system (FUSE's allow_other).
	AllowOther bool
}

// Mount mounts a new, empty lossy file system on dir, an existing
// directory, that only root may use. It calls mount(2) itself (no
// fusermount), so it needs root and /dev/fuse; the error says which is
// missing.
func Mount(dir string) (*FS, error) {
	return MountWith(dir, Options{})
}

// MountWith is Mount with options.
func MountWith(dir string, o Options) (*FS, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("mount lossyfs: /dev/fuse: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("mount lossyfs: mount(2) needs root, and this process runs as uid %d", os.Geteuid())
	}
	var zero time.Duration
	gate := &syncGate{}
	root := &dirNode{mode: 0o755, gate: gate}
	server, err := fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			AllowOther:        o.AllowOther,
			FsName:            "lossyfs",
			Name:              "lossyfs",
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	})
	if err != nil {
		return nil, fmt.Errorf("mount lossyfs on %s: %w", dir, err)
	}
	return &FS{Dir: dir, server: server, root: root, gate: gate}, nil
}

// HoldSyncs makes every fsync and fdatasync from now on wait until
// ReleaseSyncs. Holding syncs already held does nothing.
func (f *FS) HoldSyncs() {
	f.gate.mu.Lock()
	defer f.gate.mu.Unlock()
	if f.gate.release == nil {
		f.gate.release = make(chan struct{})
	}
}

// ReleaseSyncs lets the held fsyncs complete, and later ones pass.
func (f *FS) ReleaseSyncs() {
	f.gate.mu.Lock()
	defer f.gate.mu.Unlock()
	if f.gate.release != nil {
		close(f.gate.release)
		f.gate.release = nil
	}
}

// HeldSyncs is the number of fsyncs waiting now for ReleaseSyncs.
func (f *FS) HeldSyncs() int {
	f.gate.mu.Lock()
	defer f.gate.mu.Unlock()
	return f.gate.waiting
}

// syncGate holds fsyncs while the file system's syncs are held.
type syncGate struct {
	mu sync.Mutex // guards the fields below
	// release is closed by ReleaseSyncs; nil while syncs pass.
	release chan struct{}
	// waiting counts the fsyncs held now.
	waiting int
}

// wait blocks while syncs are held, until they are released or ctx ends
// (the kernel interrupts the request of a process being killed). It
// returns EINTR in the second case.
func (g *syncGate) wait(ctx context.Context) syscall.Errno {
	g.mu.Lock()
	release := g.release
	if release == nil {
		g.mu.Unlock()
		return fs.OK
	}
	g.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case <-release:
		return fs.OK
	case <-ctx.Done():
		return syscall.EINTR
	}
}

// Unmount unmounts the file system and waits for its server to stop. If a
// process still has a file open on it, it detaches the mount instead (the
// kernel ends it when the last file closes) and returns the error.
func (f *FS) Unmount() error {
	if err := f.server.Unmount(); err != nil {
		if derr := syscall.Unmount(f.Dir, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("unmount lossyfs %s: %w (and detach: %v)", f.Dir, err, derr)
		}
		return fmt.Errorf("unmount lossyfs %s: %w (detached instead)", f.Dir, err)
	}
	return nil
}

// CutStats says what a Cut threw away.
type CutStats struct {
	// Removed is the number of files that were never made durable.
	Removed int
	// RolledBack is the number of durable files whose contents differed
	// from their synced contents.
	RolledBack int
	// BytesLost is the size of the removed files plus, for each rolled-back
	// file, the bytes that differ from its synced contents (a change of
	// length counts each byte added or cut off).
	BytesLost int64
}

// Cut is the power cut: every file goes back to its last synced contents
// and every file never made durable disappears. Whoever wrote must have
// exited first: a write that arrives during Cut may survive. Once a killed
// process is reaped its requests are done (the kernel waits, unkillably,
// for a request it has handed to the server); only the write-back of
// pages it dirtied through a shared mapping may still come later.
func (f *FS) Cut() CutStats {
	var st CutStats
	cutDir(f.root.EmbeddedInode(), &st)
	return st
}

// Sync makes everything durable now, like sync(2).
func (f *FS) Sync() {
	syncDir(f.root.EmbeddedInode())
}

func cutDir(dir *fs.Inode, st *CutStats) {
	for name, ch := range dir.Children() {
		switch n := ch.Operations().(type) {
		case *dirNode:
			cutDir(ch, st)
		case *fileNode:
			n.mu.Lock()
			durable, size := n.durable, int64(len(n.data))
			if durable {
				if d := diffBytes(n.data, n.synced); d > 0 {
					st.RolledBack++
					st.BytesLost += d
				}
				n.data = append([]byte(nil), n.synced...)
			}
			n.mu.Unlock()
			if !durable {
				st.Removed++
				st.BytesLost += size
				dir.RmChild(name)
				// The kernel may hold no entry for it: ENOENT is fine.
				_ = dir.NotifyDelete(name, ch)
				continue
			}
			_ = ch.NotifyContent(0, 0)
		}
	}
}

// diffBytes counts the bytes at which a and b differ, a byte that only
// one of them has included.
func diffBytes(a, b []byte) int64 {
	n := int64(max(len(a), len(b)) - min(len(a), len(b)))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func syncDir(dir *fs.Inode) {
	for _, ch := range dir.Children() {
		switch n := ch.Operations().(type) {
		case *dirNode:
			syncDir(ch)
		case *fileNode:
			n.sync()
		}
	}
}

// dirNode is a directory. Its entries are the fs.Inode tree's children.
type dirNode struct {
	fs.Inode

	gate *syncGate // shared by every node of the file system

	mu    sync.Mutex // guards mode and owner
	mode  uint32
	owner fuse.Owner
}

var (
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeFsyncer   = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	out.Mode = fuse.S_IFDIR | d.mode
	out.Owner = d.owner
	out.Nlink = 2
	return fs.OK
}

func (d *dirNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	d.mu.Lock()
	if m, ok := in.GetMode(); ok {
		d.mode = m & 0o7777
	}
	setOwner(&d.owner, in)
	d.mu.Unlock()
	return d.Getattr(ctx, fh, out)
}

func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	f := &fileNode{mode: mode & 0o7777, owner: callerOwner(ctx), gate: d.gate}
	ch := d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG})
	f.attr(&out.Attr)
	return ch, nil, 0, fs.OK
}

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n := &dirNode{mode: mode & 0o7777, owner: callerOwner(ctx), gate: d.gate}
	ch := d.NewPersistentInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFDIR})
	out.Mode = fuse.S_IFDIR | n.mode
	out.Owner = n.owner
	return ch, fs.OK
}

// callerOwner is the user and group of the process that made a request.
func callerOwner(ctx context.Context) fuse.Owner {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Owner
	}
	return fuse.Owner{}
}

// setOwner applies the owner and group a chown sets.
func setOwner(owner *fuse.Owner, in *fuse.SetAttrIn) {
	if uid, ok := in.GetUID(); ok {
		owner.Uid = uid
	}
	if gid, ok := in.GetGID(); ok {
		owner.Gid = gid
	}
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if _, ok := ch.Operations().(*dirNode); ok {
		return syscall.EISDIR
	}
	// Let go-fuse drop the node once the kernel forgets it.
	ch.ForgetPersistent()
	return fs.OK
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if _, ok := ch.Operations().(*dirNode); !ok {
		return syscall.ENOTDIR
	}
	if len(ch.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	ch.ForgetPersistent()
	return fs.OK
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if d.GetChild(name) == nil {
		return syscall.ENOENT
	}
	dest := newParent.EmbeddedInode().GetChild(newName)
	if flags&fs.RENAME_EXCHANGE != 0 && dest == nil {
		return syscall.ENOENT
	}
	if flags&renameNoReplace != 0 && dest != nil {
		return syscall.EEXIST
	}
	if dest != nil {
		if _, ok := dest.Operations().(*dirNode); ok && len(dest.Children()) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	return fs.OK
}

// renameNoReplace is renameat2's RENAME_NOREPLACE.
const renameNoReplace = 1

// Fsync of a directory makes the creation of each file in it durable.
func (d *dirNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if errno := d.gate.wait(ctx); errno != fs.OK {
		return errno
	}
	for _, ch := range d.Children() {
		if n, ok := ch.Operations().(*fileNode); ok {
			n.mu.Lock()
			n.durable = true // with its synced contents, empty if none
			n.mu.Unlock()
		}
	}
	return fs.OK
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	// Plenty of room: the contents live in the test's memory.
	out.Bsize, out.Frsize = 4096, 4096
	out.Blocks, out.Bfree, out.Bavail = 1<<24, 1<<24, 1<<24
	out.Files, out.Ffree = 1<<20, 1<<20
	out.NameLen = 255
	return fs.OK
}

// fileNode is a regular file: its contents now and as of its last fsync.
type fileNode struct {
	fs.Inode

	gate *syncGate // shared by every node of the file system

	mu     sync.Mutex // guards the fields below
	mode   uint32
	owner  fuse.Owner
	data   []byte // current contents
	synced []byte // contents at the last fsync
	// durable is whether the file survives a cut: it was fsynced, or its
	// directory was after it was created.
	durable bool
}

var (
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
	_ fs.NodeAllocater = (*fileNode)(nil)
)

// attr fills out; the caller holds no lock.
func (f *fileNode) attr(out *fuse.Attr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out.Mode = fuse.S_IFREG | f.mode
	out.Owner = f.owner
	out.Size = uint64(len(f.data))
	out.Blocks = (out.Size + 511) / 512
	out.Nlink = 1
}

func (f *fileNode) sync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = append(f.synced[:0], f.data...)
	f.durable = true
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		f.mu.Lock()
		f.data = f.data[:0]
		f.mu.Unlock()
	}
	// No FOPEN_KEEP_CACHE: the kernel drops its cached pages at each open.
	return nil, 0, fs.OK
}

func (f *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), fs.OK
	}
	n := copy(dest, f.data[off:])
	return fuse.ReadResultData(dest[:n]), fs.OK
}

func (f *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grow(off + int64(len(data)))
	copy(f.data[off:], data)
	return uint32(len(data)), fs.OK
}

// grow extends data with zeros to at least size bytes; f.mu is held.
func (f *fileNode) grow(size int64) {
	if size <= int64(len(f.data)) {
		return
	}
	if size <= int64(cap(f.data)) {
		old := len(f.data)
		f.data = f.data[:size]
		clear(f.data[old:])
		return
	}
	n := make([]byte, size, max(size, 2*int64(cap(f.data))))
	copy(n, f.data)
	f.data = n
}

func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	return fs.OK
}

func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	if sz, ok := in.GetSize(); ok {
		if int64(sz) < int64(len(f.data)) {
			f.data = f.data[:sz]
		} else {
			f.grow(int64(sz))
		}
	}
	if m, ok := in.GetMode(); ok {
		f.mode = m & 0o7777
	}
	setOwner(&f.owner, in)
	f.mu.Unlock()
	f.attr(&out.Attr)
	return fs.OK
}

// Fsync serves both fsync and fdatasync: the contents become the synced
// contents, and the file's creation durable.
func (f *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if errno := f.gate.wait(ctx); errno != fs.OK {
		return errno
	}
	f.sync()
	return fs.OK
}

// Flush (at close) makes nothing durable.
func (f *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	return fs.OK
}

func (f *fileNode) Allocate(ctx context.Context, fh fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if mode&^uint32(1) != 0 { // only plain allocation and FALLOC_FL_KEEP_SIZE
		return syscall.EOPNOTSUPP
	}
	if mode&1 != 0 {
		return fs.OK
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grow(int64(off + size))
	return fs.OK
}
