//go:build !(arm || 386 || mips || mipsle)

// go-fuse (github.com/hanwen/go-fuse/v2/splice) does not compile on 32-bit
// platforms (syscall.Splice returns int there): the power-cut suite and
// its file system are built on 64-bit platforms only.

package lossyfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// mount mounts a lossy file system for t, or skips t when this machine
// cannot mount FUSE, and unmounts it when t ends.
func mount(t *testing.T) *FS {
	t.Helper()
	f, err := Mount(t.TempDir())
	if err != nil {
		t.Skipf("no FUSE here, so no power-cut test: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return f
}

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync %s: %v", path, err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFS_Cut_UnsyncedFileIsGone(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("never synced"), false)
	if got := readFile(t, path); string(got) != "never synced" {
		t.Fatalf("before the cut: %q", got)
	}
	st := f.Cut()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the cut: stat = %v, want not exist", err)
	}
	if st.Removed != 1 || st.BytesLost != int64(len("never synced")) {
		t.Errorf("Cut() = %+v, want 1 removed, 12 bytes lost", st)
	}
}

func TestFS_Cut_RollsBackToSyncedContents(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("synced"), true)
	// Overwrite and extend, then truncate another synced file: all lost.
	writeFile(t, path, []byte("SYNCED and more"), false)
	other := filepath.Join(f.Dir, "b")
	writeFile(t, other, []byte("keep all of me"), true)
	if err := os.Truncate(other, 4); err != nil {
		t.Fatal(err)
	}
	st := f.Cut()
	if got := readFile(t, path); string(got) != "synced" {
		t.Errorf("after the cut: a = %q, want %q", got, "synced")
	}
	if got := readFile(t, other); string(got) != "keep all of me" {
		t.Errorf("after the cut: b = %q, want %q", got, "keep all of me")
	}
	// a: "synced" became "SYNCED and more" (6 bytes changed, 9 added);
	// b: 10 bytes cut off.
	if want := (CutStats{RolledBack: 2, BytesLost: 6 + 9 + 10}); st != want {
		t.Errorf("Cut() = %+v, want %+v", st, want)
	}
}

func TestFS_Cut_KeepsWhatIsSynced(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("one"), true)
	writeFile(t, path, []byte("two"), true)
	if st := f.Cut(); st != (CutStats{}) {
		t.Errorf("Cut() = %+v, want nothing lost", st)
	}
	if got := readFile(t, path); string(got) != "two" {
		t.Errorf("after the cut: %q, want %q", got, "two")
	}
}

func TestFS_Cut_DirectoryFsyncKeepsTheNameNotTheData(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("data"), false)
	d, err := os.Open(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync dir: %v", err)
	}
	d.Close()
	f.Cut()
	if got := readFile(t, path); len(got) != 0 {
		t.Errorf("after the cut: %q, want an empty file", got)
	}
}

func TestFS_Sync(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("data"), false)
	f.Sync()
	f.Cut()
	if got := readFile(t, path); string(got) != "data" {
		t.Errorf("after Sync and a cut: %q, want %q", got, "data")
	}
}

// TestFS_SharedMmap checks what SQLite's -shm file needs: a shared
// writable mapping whose writes read() sees.
func TestFS_SharedMmap(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "shm")
	writeFile(t, path, make([]byte, 4096), false)
	fd, err := syscall.Open(path, syscall.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	m, err := syscall.Mmap(fd, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	copy(m, "mapped")
	// A second mapping of the same file sees the write.
	m2, err := syscall.Mmap(fd, 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	if !bytes.HasPrefix(m2, []byte("mapped")) {
		t.Errorf("second mapping reads %q, want \"mapped\"", m2[:6])
	}
	syscall.Munmap(m2)
	if err := syscall.Munmap(m); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := syscall.Pread(fd, buf, 0); err != nil {
		t.Fatal(err)
	}
	if string(buf) != "mapped" {
		t.Errorf("read after munmap: %q, want \"mapped\"", buf)
	}
}

// TestFS_Locks checks that byte-range locks work (the kernel keeps them):
// two open file descriptions conflict on an OFD write lock.
func TestFS_Locks(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "db")
	writeFile(t, path, []byte("x"), true)
	open := func() int {
		fd, err := syscall.Open(path, syscall.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		return fd
	}
	a, b := open(), open()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	const F_OFD_SETLK = 37
	if err := syscall.FcntlFlock(uintptr(a), F_OFD_SETLK, &lk); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	err := syscall.FcntlFlock(uintptr(b), F_OFD_SETLK, &lk)
	if !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("conflicting lock: %v, want EAGAIN", err)
	}
	if err := syscall.Flock(a, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if err := syscall.Flock(b, syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("conflicting flock: %v, want EWOULDBLOCK", err)
	}
}

func TestFS_UnlinkAndRename(t *testing.T) {
	f := mount(t)
	a, b := filepath.Join(f.Dir, "a"), filepath.Join(f.Dir, "b")
	writeFile(t, a, []byte("a"), true)
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, []byte("new a"), false)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	f.Cut()
	if got := readFile(t, b); string(got) != "a" {
		t.Errorf("renamed file after the cut: %q, want \"a\"", got)
	}
	if _, err := os.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed file after the cut: stat = %v, want not exist", err)
	}
	entries, err := os.ReadDir(f.Dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("ReadDir = %v, %v; want just b", entries, err)
	}
}

func TestFS_HoldSyncs(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("synced"), true)
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteAt([]byte("held  "), 0); err != nil {
		t.Fatal(err)
	}

	f.HoldSyncs()
	synced := make(chan error, 1)
	go func() { synced <- file.Sync() }()
	for f.HeldSyncs() == 0 {
		select {
		case err := <-synced:
			t.Fatalf("fsync returned (error %v) while syncs are held", err)
		default:
		}
		runtime.Gosched()
	}
	// Reads and writes go on meanwhile.
	if got := readFile(t, path); string(got) != "held  " {
		t.Errorf("read while the fsync is held = %q, want %q", got, "held  ")
	}
	writeFile(t, filepath.Join(f.Dir, "b"), []byte("written meanwhile"), false)
	select {
	case err := <-synced:
		t.Fatalf("fsync returned (error %v) while syncs are held", err)
	default:
	}

	f.ReleaseSyncs()
	if err := <-synced; err != nil {
		t.Fatalf("the held fsync, once released: %v", err)
	}
	if got := f.HeldSyncs(); got != 0 {
		t.Errorf("HeldSyncs after ReleaseSyncs = %d, want 0", got)
	}
	// The released fsync made the contents durable; later ones pass.
	writeFile(t, filepath.Join(f.Dir, "c"), []byte("synced after"), true)
	f.Cut()
	if got := readFile(t, path); string(got) != "held  " {
		t.Errorf("after the cut = %q, want the contents the released fsync synced, %q", got, "held  ")
	}
	if got := readFile(t, filepath.Join(f.Dir, "c")); string(got) != "synced after" {
		t.Errorf("after the cut = %q, want %q", got, "synced after")
	}
}

func TestFS_Owners(t *testing.T) {
	f := mount(t)
	path := filepath.Join(f.Dir, "a")
	writeFile(t, path, []byte("x"), false)
	owner := func(path string) (uint32, uint32) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return st.Uid, st.Gid
	}
	if uid, gid := owner(path); uid != uint32(os.Getuid()) || gid != uint32(os.Getgid()) {
		t.Errorf("a new file's owner = %d:%d, want its creator's, %d:%d", uid, gid, os.Getuid(), os.Getgid())
	}
	for _, p := range []string{path, f.Dir} {
		if err := os.Chown(p, 61184, 61185); err != nil {
			t.Fatal(err)
		}
		if uid, gid := owner(p); uid != 61184 || gid != 61185 {
			t.Errorf("%s after chown 61184:61185 = %d:%d", p, uid, gid)
		}
	}
}
