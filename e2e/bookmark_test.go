package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWatch_PreTimeoutBookmark checks that a watch with allowWatchBookmarks
// gets a BOOKMARK carrying the latest resourceVersion shortly before its
// timeoutSeconds end, and then ends, as kube-apiserver's watch cache does.
func TestWatch_PreTimeoutBookmark(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "marker"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Watch another namespace: no event is delivered, yet the bookmark
	// must carry the store's latest revision: at least that of a write
	// made after the watch began (not the revision it started from), and
	// no later than the store's revision after the bookmark. (The daemon's
	// own controllers may write in between, the more so when it runs
	// slowly under emulation, so an exact revision cannot be asked for.)
	w := openRawWatch(t, d, "/api/v1/namespaces/kube-system/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion="+cm.ResourceVersion)
	defer w.Close()
	later, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := w.MustNext()
	if ev.Type != "BOOKMARK" {
		t.Fatalf("first event = %s, want BOOKMARK", ev)
	}
	var obj struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		t.Fatal(err)
	}
	after, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.Metadata.ResourceVersion; !rvNotOlder(got, later.ResourceVersion) || !rvNotOlder(after.ResourceVersion, got) {
		t.Errorf("bookmark resourceVersion = %s, want from %s (a write after the watch began) to %s (the store's after the bookmark)", got, later.ResourceVersion, after.ResourceVersion)
	}
	if obj.Kind != "ConfigMap" || obj.Metadata.Name != "" {
		t.Errorf("bookmark object = %s, want an empty ConfigMap with only a resourceVersion", ev.Object)
	}
	w.WantEOF()
}

// TestWatch_TableBookmarks checks that the bookmarks of a Table watch are
// Tables, as kube-apiserver transforms every event of such a watch: the
// watch-list's closing bookmark is a Table without column definitions
// (they came with the first event) whose one row has the
// PartialObjectMetadata of the bookmark, with its resourceVersion and the
// initial-events-end annotation, even when includeObject=Object.
func TestWatch_TableBookmarks(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "tblbm")
	res := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/tblbm/configmaps", "application/json", "application/json", []byte(`{"metadata":{"name":"a"},"data":{"k":"v"}}`))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	res = doRaw(t, d, http.MethodGet, "/api/v1/namespaces/tblbm/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1&includeObject=Object", "", acceptTableV1, nil)
	if res.Status != http.StatusOK {
		t.Fatalf("watch: %d %s", res.Status, res.Body)
	}
	evs := watchEvents(t, res.Body)
	if len(evs) < 2 || evs[0].Type != "ADDED" || evs[1].Type != "BOOKMARK" {
		t.Fatalf("events %s, want ADDED then BOOKMARK", res.Body)
	}
	var added, bm metav1.Table
	if err := json.Unmarshal(evs[0].Object, &added); err != nil || added.Kind != "Table" || len(added.ColumnDefinitions) == 0 || len(added.Rows) != 1 {
		t.Fatalf("ADDED object %s, want a Table with columns and one row", evs[0].Object)
	}
	if err := json.Unmarshal(evs[1].Object, &bm); err != nil || bm.Kind != "Table" || bm.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("BOOKMARK object %s, want a meta.k8s.io/v1 Table", evs[1].Object)
	}
	if len(bm.ColumnDefinitions) != 0 || len(bm.Rows) != 1 || len(bm.Rows[0].Cells) != len(added.ColumnDefinitions) {
		t.Fatalf("BOOKMARK Table %s, want no column definitions and one row of %d cells", evs[1].Object, len(added.ColumnDefinitions))
	}
	var pom metav1.PartialObjectMetadata
	if err := json.Unmarshal(bm.Rows[0].Object.Raw, &pom); err != nil {
		t.Fatal(err)
	}
	if got, want := pom.ResourceVersion, added.Rows[0].Object.Raw; pom.Kind != "PartialObjectMetadata" || got == "" || pom.Annotations["k8s.io/initial-events-end"] != "true" {
		t.Errorf("bookmark row object %s, want a PartialObjectMetadata with a resourceVersion and the initial-events-end annotation (ADDED row object %s)", bm.Rows[0].Object.Raw, want)
	}
}
