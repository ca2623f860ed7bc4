package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// tickingClock returns a clock that moves on by step at every reading.
func tickingClock(start time.Time, step time.Duration) func() time.Time {
	t := start
	return func() time.Time {
		now := t
		t = t.Add(step)
		return now
	}
}

// logFiles returns the files in dir, sorted by name (backups by time, the
// live file audit.log after them: '.' sorts after '-').
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestFileWriter_Rotation: past maxBytes the file is rotated to a
// timestamped backup, only the newest maxBackups backups stay, no file
// exceeds maxBytes, every file is 0600, and what remains is the newest
// lines, in order, none missing.
func TestFileWriter_Rotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	start := time.Date(2026, 11, 25, 22, 1, 2, 0, time.UTC)
	w, err := openFileWriter(path, 1000, 2, 0, tickingClock(start, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const lines = 40
	var written []string
	for i := range lines {
		line := fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 86)) // 100 bytes
		written = append(written, line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	names := logFiles(t, dir)
	if len(names) != 3 {
		t.Fatalf("files %v, want audit.log and 2 backups", names)
	}
	var kept string
	for _, name := range names {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1000 {
			t.Errorf("%s has %d bytes, more than maxBytes 1000", name, st.Size())
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, got)
		}
		if name != "audit.log" {
			if _, err := time.Parse(backupTimeFormat, strings.TrimSuffix(strings.TrimPrefix(name, "audit-"), ".log")); err != nil {
				t.Errorf("backup %s is not named audit-<%s>.log", name, backupTimeFormat)
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		kept += string(b)
	}
	// 10 lines fill a file: 40 lines make 3 backups and a full audit.log;
	// the oldest backup is gone.
	if want := strings.Join(written[10:], ""); kept != want {
		t.Errorf("kept:\n%s\nwant the last 30 lines:\n%s", kept, want)
	}
}

// TestFileWriter_SameMillisecond: rotations within one millisecond keep
// every backup.
func TestFileWriter_SameMillisecond(t *testing.T) {
	dir := t.TempDir()
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := openFileWriter(filepath.Join(dir, "audit.log"), 10, 0, 0, func() time.Time { return fixed })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got := logFiles(t, dir)
	want := []string{
		"audit-2026-01-02T03-04-05.000.log",
		"audit-2026-01-02T03-04-05.001.log",
		"audit-2026-01-02T03-04-05.002.log",
		"audit-2026-01-02T03-04-05.003.log",
		"audit.log",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files %v, want %v", got, want)
	}
}

// TestFileWriter_Oversize: an event larger than maxBytes is written whole,
// into a file of its own.
func TestFileWriter_Oversize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	w, err := openFileWriter(path, 100, 0, 0, tickingClock(time.Now(), time.Second))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("b", 500) + "\n"
	for _, s := range []string{"small\n", big, "after\n"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	var contents []string
	for _, name := range logFiles(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		contents = append(contents, string(b))
	}
	if want := []string{"small\n", big, "after\n"}; fmt.Sprint(contents) != fmt.Sprint(want) {
		t.Errorf("files hold %q, want %q", contents, want)
	}
}

// TestFileWriter_MaxAge: backups older than maxAge (by the time in their
// names) are removed when the log opens and at each rotation; other files
// in the directory are left alone.
func TestFileWriter_MaxAge(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	old := "audit-" + now.AddDate(0, 0, -40).Format(backupTimeFormat) + ".log"
	recent := "audit-" + now.AddDate(0, 0, -10).Format(backupTimeFormat) + ".log"
	for _, name := range []string{old, recent, "audit-notatime.log", "other.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clock := now
	w, err := openFileWriter(filepath.Join(dir, "audit.log"), 10, 0, 30*24*time.Hour, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logFiles(t, dir), []string{recent, "audit-notatime.log", "audit.log", "other.log"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after open: files %v, want %v", got, want)
	}
	// 25 days later the recent backup is 35 days old: the next rotation
	// removes it.
	clock = now.AddDate(0, 0, 25)
	for _, s := range []string{"0123456789\n", "next\n"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	rotated := "audit-" + clock.Format(backupTimeFormat) + ".log"
	if got, want := logFiles(t, dir), []string{rotated, "audit-notatime.log", "audit.log", "other.log"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after rotation: files %v, want %v", got, want)
	}
}

// TestFileWriter_Mode: the log is created 0600 in a directory created
// 0700; an existing log keeps the mode its owner gave it, and so does the
// file that replaces it at rotation.
func TestFileWriter_Mode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "audit.log")
	w, err := openFileWriter(path, 0, 0, 0, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", p, got, want)
		}
	}

	if err := os.WriteFile(path, []byte("x\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	w, err = openFileWriter(path, 4, 0, 0, tickingClock(time.Now(), time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("rotates\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o640 {
		t.Errorf("after rotation %s mode %v, want the old file's 0640", path, got)
	}
}

// TestFileWriter_NoRotation: with maxBytes 0 the file only grows.
func TestFileWriter_NoRotation(t *testing.T) {
	dir := t.TempDir()
	w, err := openFileWriter(filepath.Join(dir, "audit.log"), 0, 1, 0, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := w.Write([]byte(strings.Repeat("z", 99) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if got := logFiles(t, dir); len(got) != 1 {
		t.Errorf("files %v, want audit.log alone", got)
	}
}
