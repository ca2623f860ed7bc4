package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteKubeconfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	check := func(when, want string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s: file holds %q (%v), want %q", when, got, err, want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", when, fi.Mode().Perm(), err)
		}
	}
	for _, c := range []struct{ when, kc string }{
		{"new file", "a: 1\n"},
		{"same contents", "a: 1\n"},
		{"new contents", "a: 22\n"},
	} {
		if err := writeKubeconfigFile(path, []byte(c.kc)); err != nil {
			t.Fatalf("%s: %v", c.when, err)
		}
		check(c.when, c.kc)
	}
	// The same contents in a file others may read: written again, 0600.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeKubeconfigFile(path, []byte("a: 22\n")); err != nil {
		t.Fatal(err)
	}
	check("same contents, mode 0644", "a: 22\n")
}
