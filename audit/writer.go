package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// backupTimeFormat is the timestamp in a rotated file's name,
// <name>-<timestamp><ext> (audit-2026-11-25T22-01-02.123.log for
// audit.log), in UTC: the names kube-apiserver's rotation library
// (lumberjack) gives its backups, so tools that collect them find ours.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// errClosed is returned by writes after Close.
var errClosed = errors.New("audit: log closed")

// fileWriter appends events to a file, one Write per event, and rotates it
// by size: when a write would take the file past maxBytes, the file is
// renamed to a timestamped backup and a new one started, and the backups
// beyond maxBackups or older than maxAge are removed, all before the write
// returns. Nothing is buffered: an event is in the file (the page cache)
// when Write returns. It is safe for concurrent use.
//
// kube-apiserver uses lumberjack for this, with the same backup names, and
// the same file modes (new files 0600, a rotated file's successor with its
// mode). This writer is written here rather than linked (lumberjack adds
// 44 KB to the stripped binary) because it also removes old backups before
// the write returns rather than in a background goroutine, keeps a backup
// that a second rotation within the same millisecond would overwrite, and
// writes an event larger than the limit into a file of its own, where
// lumberjack refuses it.
type fileWriter struct {
	path       string
	maxBytes   int64         // 0: never rotate
	maxBackups int           // 0: keep every backup
	maxAge     time.Duration // 0: keep backups of any age
	now        func() time.Time

	// mu guards everything below, and serializes writes so that events
	// never interleave.
	mu     sync.Mutex
	f      *os.File // nil after a failed rotation; the next write reopens
	size   int64    // bytes in f
	rotate bool     // f is a regular file, which may be rotated
	stdout bool     // f is os.Stdout, never closed or rotated
	closed bool
}

// openFileWriter opens (creating it 0600, and its directory 0700) the file
// at path for appending, or stdout when path is "-", and removes the
// backups that are too many or too old.
func openFileWriter(path string, maxBytes int64, maxBackups int, maxAge time.Duration, now func() time.Time) (*fileWriter, error) {
	w := &fileWriter{path: path, maxBytes: maxBytes, maxBackups: maxBackups, maxAge: maxAge, now: now}
	if path == "-" {
		w.f, w.stdout = os.Stdout, true
		return w, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit log directory: %w", err)
	}
	if err := w.openLocked(0o600); err != nil {
		return nil, err
	}
	if w.rotate {
		if err := w.pruneLocked(); err != nil {
			w.f.Close()
			return nil, err
		}
	}
	return w, nil
}

// openLocked opens w.path for appending, creating it with mode perm.
func (w *fileWriter) openLocked(perm fs.FileMode) error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open audit log: %w", err)
	}
	if st.Mode().IsRegular() && st.Size() == 0 && st.Mode().Perm() != perm {
		// Created by us: umask may have narrowed perm, never widened
		// it; set it exactly (an older backup's mode, or 0600).
		_ = f.Chmod(perm)
	}
	w.f, w.size, w.rotate = f, st.Size(), st.Mode().IsRegular()
	return nil
}

// Write appends p, rotating first when p would take the file past
// maxBytes. p goes into a fresh file whole even when it is larger than
// maxBytes.
func (w *fileWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errClosed
	}
	var rotateErr error
	if w.f == nil {
		if err := w.openLocked(0o600); err != nil {
			return 0, err
		}
	} else if w.rotate && w.maxBytes > 0 && w.size > 0 && w.size+int64(len(p)) > w.maxBytes {
		rotateErr = w.rotateLocked()
		if w.f == nil {
			return 0, rotateErr
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err == nil {
		err = rotateErr
	}
	return n, err
}

// rotateLocked renames the file to a backup, opens a new one with the old
// one's mode, and prunes the backups. When the rename fails it goes on
// writing to the old file; when the new file cannot be opened, w.f is nil
// and the next write tries again.
func (w *fileWriter) rotateLocked() error {
	perm := fs.FileMode(0o600)
	if st, err := w.f.Stat(); err == nil {
		perm = st.Mode().Perm()
	}
	if err := w.f.Close(); err != nil {
		w.f = nil
		return fmt.Errorf("rotate audit log: %w", err)
	}
	w.f = nil
	backup, err := w.backupName(w.now())
	if err == nil {
		err = os.Rename(w.path, backup)
	}
	if err != nil {
		if oerr := w.openLocked(perm); oerr != nil {
			return errors.Join(fmt.Errorf("rotate audit log: %w", err), oerr)
		}
		return fmt.Errorf("rotate audit log: %w", err)
	}
	if err := w.openLocked(perm); err != nil {
		return err
	}
	return w.pruneLocked()
}

// backupName returns a backup name for time t that no file has yet: two
// rotations in one millisecond take the next free millisecond.
func (w *fileWriter) backupName(t time.Time) (string, error) {
	prefix, ext := w.backupParts()
	t = t.UTC()
	for range 1000 {
		name := prefix + t.Format(backupTimeFormat) + ext
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
		t = t.Add(time.Millisecond)
	}
	return "", fmt.Errorf("no free backup name after %s", prefix+t.Format(backupTimeFormat)+ext)
}

// backupParts splits the backup names of w.path: dir/audit.log has
// backups dir/audit-<timestamp>.log.
func (w *fileWriter) backupParts() (prefix, ext string) {
	ext = filepath.Ext(w.path)
	return strings.TrimSuffix(w.path, ext) + "-", ext
}

// backup is one rotated file and the time in its name.
type backup struct {
	path string
	t    time.Time
}

// backups lists the rotated files of w.path, newest first.
func (w *fileWriter) backups() ([]backup, error) {
	prefix, ext := w.backupParts()
	entries, err := os.ReadDir(filepath.Dir(w.path))
	if err != nil {
		return nil, fmt.Errorf("list audit log backups: %w", err)
	}
	base := filepath.Base(prefix)
	var out []backup
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, base) || !strings.HasSuffix(name, ext) {
			continue
		}
		ts := name[len(base) : len(name)-len(ext)]
		t, err := time.Parse(backupTimeFormat, ts)
		if err != nil {
			continue
		}
		out = append(out, backup{path: filepath.Join(filepath.Dir(w.path), name), t: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t.After(out[j].t) })
	return out, nil
}

// pruneLocked removes the backups beyond the newest maxBackups and those
// older than maxAge.
func (w *fileWriter) pruneLocked() error {
	if w.maxBackups == 0 && w.maxAge == 0 {
		return nil
	}
	list, err := w.backups()
	if err != nil {
		return err
	}
	var errs []error
	cutoff := w.now().Add(-w.maxAge)
	for i, b := range list {
		if (w.maxBackups > 0 && i >= w.maxBackups) || (w.maxAge > 0 && b.t.Before(cutoff)) {
			if err := os.Remove(b.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove audit log backup: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Close closes the file (not stdout). Later writes fail with errClosed.
func (w *fileWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.f == nil || w.stdout {
		return nil
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close audit log: %w", err)
	}
	return nil
}
