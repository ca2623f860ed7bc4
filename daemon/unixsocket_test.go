package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenUnix_StalePath(t *testing.T) {
	tests := []struct {
		name string
		// prepare makes what is at path before listenUnix runs.
		prepare func(t *testing.T, path string)
		// wantErr is part of the error, or "" to listen.
		wantErr string
	}{
		{name: "nothing there", prepare: func(*testing.T, string) {}},
		{name: "a stale socket", prepare: func(t *testing.T, path string) {
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false) // as after a crash
			ln.Close()
		}},
		{name: "a socket in use", wantErr: "in use by another process", prepare: func(t *testing.T, path string) {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}},
		{name: "a regular file", wantErr: "not a socket", prepare: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a directory", wantErr: "not a socket", prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a symbolic link to a stale socket", wantErr: "not a socket", prepare: func(t *testing.T, path string) {
			target := path + ".target"
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: target, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false)
			ln.Close()
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edgeapi.sock")
			tt.prepare(t, path)
			before, _ := os.Lstat(path)
			ln, err := listenUnix(path)
			if tt.wantErr != "" {
				if err == nil {
					ln.Close()
					t.Fatalf("listenUnix: got no error, want one with %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("listenUnix: got error %q, want one with %q", err, tt.wantErr)
				}
				after, statErr := os.Lstat(path)
				if statErr != nil || !os.SameFile(before, after) {
					t.Errorf("the file at the path was replaced or removed (%v)", statErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("listenUnix: %v", err)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode().Perm(), os.FileMode(unixSocketMode); got != want {
				t.Errorf("socket mode: got %v, want %v", got, want)
			}
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatalf("dial the new socket: %v", err)
			}
			c.Close()
			ln.Close()
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("after Close: Lstat got %v, want the socket removed", err)
			}
		})
	}
}
