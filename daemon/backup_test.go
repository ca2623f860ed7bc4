package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/store"
)

// streamFunc is a backend whose backup is stream; nothing else of it is
// used.
type streamFunc struct {
	backend
	stream func(start func(rev, size int64) (io.Writer, error)) (int64, error)
}

func (s streamFunc) BackupStream(_ context.Context, start func(rev, size int64) (io.Writer, error)) (int64, error) {
	return s.stream(start)
}

// TestBackupHandler_fetch checks what `edgeapi backup` gets from the
// endpoint, over HTTP/1.1 and HTTP/2: a whole copy is written to FILE
// with its revision; a backup the store gives up before it starts is a
// 503 with the store's reason; one given up while it is sent leaves the
// client with an error and no file, and the next backup is served.
func TestBackupHandler_fetch(t *testing.T) {
	page := bytes.Repeat([]byte("p"), 4096)
	whole := bytes.Repeat(page, 300)
	aborted := fmt.Errorf("back up: %w: the WAL grew to 9 bytes", store.ErrBackupAborted)
	var stream func(start func(rev, size int64) (io.Writer, error)) (int64, error)
	d := &daemon{log: zap.NewNop(), db: streamFunc{stream: func(start func(rev, size int64) (io.Writer, error)) (int64, error) {
		return stream(start)
	}}}
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(d.backupHandler())
			if proto == "HTTP/2" {
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			target := apiTarget{client: srv.Client(), base: srv.URL}
			dir := t.TempDir()
			ctx := context.Background()

			stream = func(start func(rev, size int64) (io.Writer, error)) (int64, error) {
				w, err := start(42, int64(len(whole)))
				if err != nil {
					return 0, err
				}
				if _, err := w.Write(whole[:len(whole)/2]); err != nil {
					return 0, err
				}
				return 0, aborted
			}
			cut := filepath.Join(dir, "cut")
			if _, _, err := fetchBackup(ctx, target, cut, 0); err == nil {
				t.Errorf("fetchBackup() of a backup aborted while sent: error nil, want one")
			}
			for _, p := range []string{cut, cut + ".partial"} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("after a backup aborted while sent: %s: %v, want no file", p, err)
				}
			}

			stream = func(func(rev, size int64) (io.Writer, error)) (int64, error) { return 0, aborted }
			refused := filepath.Join(dir, "refused")
			_, _, err := fetchBackup(ctx, target, refused, 0)
			var se *backupStatusError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "the WAL grew to 9 bytes") {
				t.Errorf("fetchBackup() of a backup aborted before it started: error %v, want the 503 with the store's reason", err)
			}
			if _, err := os.Lstat(refused); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after a 503: %s: %v, want no file", refused, err)
			}

			stream = func(start func(rev, size int64) (io.Writer, error)) (int64, error) {
				w, err := start(42, int64(len(whole)))
				if err != nil {
					return 0, err
				}
				for off := 0; off < len(whole); off += 64 << 10 {
					if _, err := w.Write(whole[off:min(off+64<<10, len(whole))]); err != nil {
						return 0, err
					}
				}
				return 42, nil
			}
			ok := filepath.Join(dir, "ok")
			rev, size, err := fetchBackup(ctx, target, ok, 0)
			if err != nil || rev != 42 || size != int64(len(whole)) {
				t.Fatalf("fetchBackup() = %d, %d, %v; want revision 42, %d bytes", rev, size, err, len(whole))
			}
			got, err := os.ReadFile(ok)
			if err != nil || !bytes.Equal(got, whole) {
				t.Errorf("backup file: %d bytes (%v), want the %d streamed", len(got), err, len(whole))
			}
			if fi, err := os.Stat(ok); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("backup file mode: %v (%v), want 0600", fi.Mode().Perm(), err)
			}
		})
	}
}
