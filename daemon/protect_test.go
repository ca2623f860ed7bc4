package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// runServeObserved runs the serve path in-process on dataDir with a
// logger whose entries the test reads, writes one object over HTTP, and
// shuts the daemon down.
func runServeObserved(t *testing.T, dataDir string) *observer.ObservedLogs {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := defaultServeConfig()
	cfg.DataDir, cfg.Listen = dataDir, "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := startDaemon(ctx, cfg, zap.New(core))
	if err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()

	server, client := serverFromKubeconfig(t, dataDir)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"mode-"},"data":{"k":"v"}}`
	resp, err := client.Post(server+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create configmap: status %d, want 201", resp.StatusCode)
	}
	// Stat while the daemon runs: a clean shutdown checkpoints the WAL,
	// and the -wal and -shm files may not outlive it.
	checkDBFileModes(t, dataDir)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop within 30s")
	}
	return logs
}

// checkDBFileModes checks that the database and its -wal and -shm files
// exist and only their owner may read or write them.
func checkDBFileModes(t *testing.T, dataDir string) {
	t.Helper()
	for _, name := range []string{"edgeapi.db", "edgeapi.db-wal", "edgeapi.db-shm"} {
		fi, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			t.Errorf("stat %s: %v", name, err)
			continue
		}
		if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
			t.Errorf("%s mode = %v, want %v", name, got, want)
		}
	}
}

// TestServe_DatabaseFileModes: in a data dir that already exists with
// mode 0755, the database, -wal and -shm files are created 0600, files
// left with a wider mode are narrowed, and both are logged.
func TestServe_DatabaseFileModes(t *testing.T) {
	// The umask most systems run with: without the fix SQLite creates
	// the files 0644.
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })

	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("created", func(t *testing.T) {
		logs := runServeObserved(t, dataDir)
		if n := logs.FilterMessageSnippet("data dir is accessible to other users").Len(); n == 0 {
			t.Errorf("no warning about the 0755 data dir; logs: %v", logs.All())
		}
	})
	t.Run("narrowed", func(t *testing.T) {
		// A database from before the fix (or chmod'ed by hand).
		for _, name := range []string{"edgeapi.db", "edgeapi.db-wal", "edgeapi.db-shm"} {
			p := filepath.Join(dataDir, name)
			if err := os.WriteFile(p, nil, 0o644); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		logs := runServeObserved(t, dataDir)
		if got := logs.FilterMessageSnippet("narrowed its mode").Len(); got < 1 {
			t.Errorf("narrowed-mode warnings = %d, want at least 1 (edgeapi.db); logs: %v", got, logs.All())
		}
	})
}

// TestServe_RefusesPublicListen: the binary exits non-zero, saying why,
// when asked to let every client do everything (AlwaysAllow) on an address
// that is not loopback without --insecure-allow-public-listen.
func TestServe_RefusesPublicListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		t.Run(addr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, edgeapiBinary(t), "serve", "--data-dir", t.TempDir(), "--listen", addr, "--authorization-mode", "AlwaysAllow")
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 {
				t.Fatalf("edgeapi serve --listen %s: err = %v, want a non-zero exit; output:\n%s", addr, err, out)
			}
			for _, want := range []string{"not a loopback address", "AlwaysAllow lets every client", "--insecure-allow-public-listen"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output does not say %q:\n%s", want, out)
				}
			}
		})
	}
}
