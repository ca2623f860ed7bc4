package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keyOrderNamespaces are created in this order. kube-apiserver 1.36 on
// etcd lists their ConfigMaps in etcd key order, by the bytes of
// "<namespace>/<name>": a-b, a, a0, ab ('-' is 0x2D, '/' 0x2F, '0' 0x30).
var keyOrderNamespaces = []string{"a", "a-b", "ab", "a0"}

// nsNames is "namespace/name" of each item.
func nsNames(items []corev1.ConfigMap) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].Namespace + "/" + items[i].Name
	}
	return out
}

// etcdKeyOrdered reports whether keys ("namespace/name") are in strictly
// increasing byte order, as etcd returns them.
func etcdKeyOrdered(keys []string) bool {
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			return false
		}
	}
	return true
}

// pageAll lists path (which has a query) in pages of limit, the first
// page with the parameters first added, the others with continue tokens;
// it fails on a page whose remainingItemCount, when wantRemaining or
// present on the last page, is not the count of the items after it.
func pageAll(t *testing.T, d *Daemon, path, first string, limit int, wantRemaining bool) []corev1.ConfigMap {
	t.Helper()
	var all []corev1.ConfigMap
	var remaining []*int64
	next := fmt.Sprintf("%s%s&limit=%d", path, first, limit)
	for page := 1; ; page++ {
		if page > 100 {
			t.Fatalf("GET %s: more than 100 pages", path)
		}
		l := rawGet(t, d, next).cmList(t, fmt.Sprintf("page %d of %s", page, path))
		all = append(all, l.Items...)
		remaining = append(remaining, l.RemainingItemCount)
		if l.Continue == "" {
			break
		}
		next = fmt.Sprintf("%s&limit=%d&continue=%s", path, limit, url.QueryEscape(l.Continue))
	}
	// Page i ended after sum(len(pages[:i+1])) items; the rest follow.
	seen := 0
	for i, r := range remaining {
		seen += min(limit, len(all)-seen)
		last := i == len(remaining)-1
		switch {
		case last && r != nil:
			t.Errorf("GET %s: last page has remainingItemCount %d, want none", path, *r)
		case !last && wantRemaining && (r == nil || *r != int64(len(all)-seen)):
			t.Errorf("GET %s: page %d remainingItemCount %v, want %d", path, i+1, deref(r), len(all)-seen)
		}
	}
	return all
}

// TestList_EtcdKeyOrderAcrossNamespaces lists ConfigMaps across namespaces
// a, a-b, ab and a0 as kube-apiserver on etcd does, in etcd key order
// (a-b, a, a0, ab): whole, in pages of one and two with continue tokens
// (no repeats, no gaps), at a past resourceVersion, and as a watch's
// initial events.
func TestList_EtcdKeyOrderAcrossNamespaces(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	for _, ns := range keyOrderNamespaces {
		createNamespace(t, cs, ns)
		for _, name := range []string{"x", "y"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"keyorder": "1"}}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"a-b/x", "a-b/y", "a/x", "a/y", "a0/x", "a0/y", "ab/x", "ab/y"}
	const selected = "/api/v1/configmaps?labelSelector=keyorder%3D1"

	full := rawGet(t, d, selected).cmList(t, "list")
	if got := nsNames(full.Items); !slices.Equal(got, want) {
		t.Errorf("GET %s = %v, want %v", selected, got, want)
	}
	for _, limit := range []int{1, 2} {
		if got := nsNames(pageAll(t, d, selected, "", limit, false)); !slices.Equal(got, want) {
			t.Errorf("GET %s in pages of %d = %v, want %v", selected, limit, got, want)
		}
	}

	// Without a selector (other ConfigMaps may exist, such as
	// kube-root-ca.crt): every page in key order, continuing where the
	// last ended, with remainingItemCount.
	everything := nsNames(rawGet(t, d, "/api/v1/configmaps").cmList(t, "list all").Items)
	if !etcdKeyOrdered(everything) {
		t.Errorf("GET /api/v1/configmaps = %v, want etcd key order", everything)
	}
	for _, limit := range []int{1, 3} {
		if got := nsNames(pageAll(t, d, "/api/v1/configmaps?", "", limit, true)); !slices.Equal(got, everything) {
			t.Errorf("GET /api/v1/configmaps in pages of %d = %v, want %v", limit, got, everything)
		}
	}

	// At the revision of the list above, after changes: the order of the
	// change log's past states and the current rows merged.
	if err := cs.CoreV1().ConfigMaps("a").Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, cs, "a-a")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"keyorder": "1"}}}
	if _, err := cs.CoreV1().ConfigMaps("a-a").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	past := selected + "&resourceVersionMatch=Exact&resourceVersion=" + full.ResourceVersion
	if got := nsNames(rawGet(t, d, past).cmList(t, "past list").Items); !slices.Equal(got, want) {
		t.Errorf("GET %s = %v, want %v", past, got, want)
	}
	if got := nsNames(pageAll(t, d, selected, "&resourceVersion="+full.ResourceVersion, 1, false)); !slices.Equal(got, want) {
		t.Errorf("GET %s at resourceVersion %s in pages of 1 = %v, want %v", selected, full.ResourceVersion, got, want)
	}
	now := []string{"a-a/x", "a-b/x", "a-b/y", "a/y", "a0/x", "a0/y", "ab/x", "ab/y"}
	if got := nsNames(rawGet(t, d, selected).cmList(t, "list after changes").Items); !slices.Equal(got, now) {
		t.Errorf("GET %s after changes = %v, want %v", selected, got, now)
	}

	// A watch's initial ADDED events come in the same order.
	w := openRawWatch(t, d, selected+"&watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	defer w.Close()
	var got []string
	for {
		ev := w.MustNext()
		if ev.Type != "ADDED" {
			break
		}
		cm := ev.configMap(t)
		got = append(got, cm.Namespace+"/"+cm.Name)
	}
	if !slices.Equal(got, now) {
		t.Errorf("watch initial events = %v, want %v", got, now)
	}
}
