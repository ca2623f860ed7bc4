//go:build etcd

package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMigrate_unreachableEtcd: an etcd that does not answer fails the
// move after migrateConnectTimeout instead of hanging it, and leaves no
// database in the target.
func TestMigrate_unreachableEtcd(t *testing.T) {
	old := migrateConnectTimeout
	migrateConnectTimeout = 500 * time.Millisecond
	t.Cleanup(func() { migrateConnectTimeout = old })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // accepts connections, never answers
	from, to, err := migrateLocations("etcd:http://"+l.Addr().String(), "sqlite:"+filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- migrate(context.Background(), migrateOptions{etcdPrefix: "/registry"}, from, to, &out) }()
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("migrate from an etcd that does not answer did not return")
	}
	if err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("migrate = %v, want no answer", err)
	}
	if m, _ := filepath.Glob(filepath.Join(to.dir, "edgeapi.db*")); len(m) != 0 {
		t.Errorf("target files after a failed move: %v", m)
	}
}
