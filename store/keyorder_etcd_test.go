//go:build etcd

package store_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
	"github.com/edgeapi/edgeapi/store/etcdstore"
)

// This file checks that the SQLite store and store/etcdstore, which
// keeps kube-apiserver's keys in a real etcd, list in the same order:
// `go test -tags etcd ./store` with $EDGEAPI_ETCD, or the etcd of
// scripts/kube-ref-build, skipped without one.

// runEtcd starts a single-member etcd on loopback for the test and
// returns its client URL.
func runEtcd(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("EDGEAPI_ETCD")
	if bin == "" {
		bin = filepath.Join("..", ".cache", "kube-ref", "bin", "etcd")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no etcd binary (%v): set EDGEAPI_ETCD or run scripts/kube-ref-build etcd", err)
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	client := fmt.Sprintf("127.0.0.1:%d", port())
	peer := fmt.Sprintf("http://127.0.0.1:%d", port())
	var log bytes.Buffer
	cmd := exec.Command(bin, "--name", "keyorder", "--data-dir", t.TempDir(),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "keyorder="+peer, "--log-level", "error")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("etcd log:\n%s", log.Bytes())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", client); err == nil {
			c.Close()
			return "http://" + client
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not listen on %s", client)
		}
	}
}

// listKeys lists opts from s in pages of limit (0: one list) and returns
// each object's "namespace/name" and each page's Remaining.
func listKeys(t *testing.T, s store.Store, opts store.ListOptions, limit int) (keys []string, remaining []int64) {
	t.Helper()
	opts.Limit = limit
	for page := 0; ; page++ {
		if page > 200 {
			t.Fatalf("List(%+v): more than 200 pages", opts)
		}
		res, err := s.List(context.Background(), opts)
		if err != nil {
			t.Fatalf("List(%+v) error = %v", opts, err)
		}
		for _, o := range res.Objects {
			keys = append(keys, o.Key.Namespace+"/"+o.Key.Name)
		}
		remaining = append(remaining, res.Remaining)
		if !res.More || len(res.Objects) == 0 {
			return keys, remaining
		}
		last := res.Objects[len(res.Objects)-1].Key
		opts.Rev, opts.AfterNamespace, opts.AfterName = res.Rev, last.Namespace, last.Name
	}
}

func TestStores_ListOrderAgree(t *testing.T) {
	ctx := context.Background()
	sqlite, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Close()
	etcd, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: []string{runEtcd(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	stores := []struct {
		name string
		s    store.Store
	}{{"sqlite", sqlite}, {"etcd", etcd}}

	namespaces := []string{"a", "a-b", "ab", "a0", "a.b", "a-", "a-b-c", "b", "a-a"}
	names := []string{"x", "x-1", "x.1", "x0", "y"}
	value := func(ns, name string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"name":%q,"namespace":%q,"uid":"u"}}`, name, ns)
	}
	revs := make([]int64, len(stores))
	for i, st := range stores {
		for _, ns := range namespaces {
			for _, name := range names {
				if _, err := st.s.Create(ctx, store.Key{Resource: "configmaps", Namespace: ns, Name: name}, "u", value(ns, name)); err != nil {
					t.Fatalf("%s: Create: %v", st.name, err)
				}
			}
		}
		for _, name := range []string{"n", "n-1", "n.1", "n0", "n_"} {
			if _, err := st.s.Create(ctx, store.Key{Resource: "nodes", Name: name}, "u", value("", name)); err != nil {
				t.Fatalf("%s: Create: %v", st.name, err)
			}
		}
		revs[i] = st.s.Rev()
		// Changes after revs[i], so that a list there merges past states.
		for _, k := range []store.Key{{Resource: "configmaps", Namespace: "a", Name: "x"}, {Resource: "configmaps", Namespace: "a-b", Name: "y"}} {
			if _, err := st.s.Delete(ctx, k, store.Preconditions{}); err != nil {
				t.Fatalf("%s: Delete: %v", st.name, err)
			}
		}
		if _, err := st.s.Create(ctx, store.Key{Resource: "configmaps", Namespace: "a-", Name: "z"}, "u", value("a-", "z")); err != nil {
			t.Fatalf("%s: Create: %v", st.name, err)
		}
	}

	tests := []struct {
		name string
		opts store.ListOptions
		past bool
	}{
		{name: "all", opts: store.ListOptions{Resource: "configmaps"}},
		{name: "cluster-scoped", opts: store.ListOptions{Resource: "nodes"}},
		{name: "after a-b/x", opts: store.ListOptions{Resource: "configmaps", AfterNamespace: "a-b", AfterName: "x"}},
		{name: "namespace a after a-b/y", opts: store.ListOptions{Resource: "configmaps", Namespace: "a", AfterNamespace: "a-b", AfterName: "y"}},
		{name: "namespace a-b after a/x", opts: store.ListOptions{Resource: "configmaps", Namespace: "a-b", AfterNamespace: "a", AfterName: "x"}},
		{name: "namespace a0 after a/y", opts: store.ListOptions{Resource: "configmaps", Namespace: "a0", AfterNamespace: "a", AfterName: "y"}},
		{name: "past", opts: store.ListOptions{Resource: "configmaps"}, past: true},
		{name: "past after a.b/x0", opts: store.ListOptions{Resource: "configmaps", AfterNamespace: "a.b", AfterName: "x0"}, past: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, limit := range []int{0, 1, 2, 7} {
				var first []string
				var firstRemaining []int64
				for i, st := range stores {
					opts := tt.opts
					if tt.past {
						opts.Rev = revs[i]
					}
					keys, remaining := listKeys(t, st.s, opts, limit)
					if i == 0 {
						first, firstRemaining = keys, remaining
						if len(keys) == 0 && !strings.HasPrefix(tt.name, "namespace a-b") {
							t.Errorf("%s: List(%+v) found nothing", st.name, opts)
						}
						continue
					}
					if !slices.Equal(keys, first) {
						t.Errorf("limit %d: %s lists %v, %s %v", limit, st.name, keys, stores[0].name, first)
					}
					if !slices.Equal(remaining, firstRemaining) {
						t.Errorf("limit %d: %s pages' Remaining %v, %s %v", limit, st.name, remaining, stores[0].name, firstRemaining)
					}
				}
			}
		})
	}
}
