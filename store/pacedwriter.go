package store

import (
	"fmt"
	"os"
	"time"
)

// PacedWriter writes a large file (a backup: the size of the database)
// without leaving more than two windows of it dirty in the page cache.
// After each window it has written it starts that window's write-back and
// waits for the window before it (sync_file_range), and then drops the
// finished window from the page cache: so an fsync of another file on the
// same file system (a commit's, of the WAL) queues behind at most a window
// or two of the copy rather than behind hundreds of megabytes, and the copy
// does not push the daemon's own pages out of memory. Where
// sync_file_range does not exist it only writes (Sync writes the rest).
// With a maximum rate it also sleeps so as not to write faster than that.
type PacedWriter struct {
	f *os.File
	// maxRate is the most bytes a second Write lets through, 0 for no
	// bound; begun is when the first Write began.
	maxRate int64
	begun   time.Time
	// written is how much was written; started is where the write-back
	// started so far ends, waited where the finished write-back ends.
	written, started, waited int64
	// window is the write-back window; pacedWindow unless a test sets it.
	window int64
}

// pacedWindow is PacedWriter's window.
const pacedWindow = 1 << 20 // bytes

// NewPacedWriter returns a PacedWriter that writes f from its current
// offset, which must be 0, at most maxRate bytes a second (0: as fast as
// the disk takes them).
func NewPacedWriter(f *os.File, maxRate int64) *PacedWriter {
	return &PacedWriter{f: f, window: pacedWindow, maxRate: max(maxRate, 0)}
}

// rateSlack is how far ahead of its maximum rate a PacedWriter may get
// before it sleeps, so that it sleeps a few times a second rather than at
// every Write.
const rateSlack = 10 * time.Millisecond

// Write writes p and paces the write-back of what is written.
func (w *PacedWriter) Write(p []byte) (int, error) {
	if w.begun.IsZero() {
		w.begun = time.Now()
	}
	n, err := w.f.Write(p)
	w.written += int64(n)
	for w.written-w.started >= w.window {
		w.pace(w.started + w.window)
	}
	if w.maxRate > 0 {
		due := time.Duration(float64(w.written) / float64(w.maxRate) * float64(time.Second))
		if ahead := due - time.Since(w.begun); ahead >= rateSlack {
			time.Sleep(ahead)
		}
	}
	return n, err
}

// pace starts the write-back of [w.started, end), then waits for all of
// it before w.started, and drops that from the page cache.
func (w *PacedWriter) pace(end int64) {
	startWriteBack(w.f, w.started, end-w.started)
	if w.started > w.waited {
		waitWriteBack(w.f, w.waited, w.started-w.waited)
		w.waited = w.started
	}
	w.started = end
}

// Sync writes back what is left, the same way, and fsyncs the file.
func (w *PacedWriter) Sync() error {
	if w.written > w.started {
		w.pace(w.written)
	}
	if w.started > w.waited {
		waitWriteBack(w.f, w.waited, w.started-w.waited)
		w.waited = w.started
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.f.Name(), err)
	}
	return nil
}
