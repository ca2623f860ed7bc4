package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBackWindow is how much of the database file writeBack hands to the
// kernel at a time.
const writeBackWindow = 1 << 20 // bytes

// writeBack writes f's dirty pages to disk one writeBackWindow at a time,
// waiting for each window before it starts the next, so that an fsync of
// another file (a commit's, of the WAL) queues behind one window's writes
// rather than behind all of them. It does not flush the disk's cache or
// the file's metadata: an fsync must follow. Errors are ignored, since
// that fsync writes whatever is left.
func writeBack(f *os.File) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	fd := int(f.Fd())
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	for off := int64(0); off < fi.Size(); off += writeBackWindow {
		if unix.SyncFileRange(fd, off, writeBackWindow, flags) != nil {
			return
		}
	}
}

// startWriteBack starts writing f's dirty pages in [off, off+n) to disk
// and returns without waiting for them.
func startWriteBack(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// waitWriteBack writes f's dirty pages in [off, off+n) to disk, waits for
// them, and drops them from the page cache (errors are ignored: the fsync
// that must follow reports them).
func waitWriteBack(f *os.File, off, n int64) {
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	if unix.SyncFileRange(int(f.Fd()), off, n, flags) == nil {
		_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
	}
}
