package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPacedWriter_Write writes a file in pieces that straddle the
// write-back windows and checks that the file holds exactly what was
// written once synced (the windows' write-back and the page-cache drop
// must not lose or move a byte).
func TestPacedWriter_Write(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewPacedWriter(f, 0)
	w.window = 8 << 10
	var want []byte
	for i := range 200 {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*97%5000)
		if n, err := w.Write(p); err != nil || n != len(p) {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
		want = append(want, p...)
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync() error = %v", err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("file holds %d bytes (%v), want the %d written", len(got), err, len(want))
	}
}
