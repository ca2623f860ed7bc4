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

// WriteBackFrom is writeBack for a file being written from start to end:
// it writes back the whole windows from off up to f's size and returns
// the offset it got to, for the next call. Exported for the backup
// client, which writes a copy the size of the database.
func WriteBackFrom(f *os.File, off int64) int64 {
	fi, err := f.Stat()
	if err != nil {
		return off
	}
	fd := int(f.Fd())
	const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	for ; off+writeBackWindow <= fi.Size(); off += writeBackWindow {
		if unix.SyncFileRange(fd, off, writeBackWindow, flags) != nil {
			return off
		}
	}
	return off
}
