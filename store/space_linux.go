package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f size bytes of allocated blocks: fallocate, so that a
// file system that compresses or dedups zeros still sets the space aside,
// or written zeros where fallocate is not supported.
func allocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return writeZeros(f, size)
	}
	return err
}

// freeBytes returns the bytes an unprivileged process may still allocate
// on the file system holding dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
