package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// TestWatch_WatchListMetadata: a watch-list of PartialObjectMetadata (the
// metadata informers of client-go and controller-runtime's OnlyMetadata
// watches) ends its initial events with a BOOKMARK that is itself a
// PartialObjectMetadata, as kube-apiserver transforms every event object
// of the watch. With the kind's own object there instead, client-go's
// metadata client cannot decode the bookmark as the type it expects and
// its reflector falls back to a LIST.
func TestWatch_WatchListMetadata(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "watchlist-metadata"
	createNamespace(t, cs, ns)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(d.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	send := true
	w, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &send,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended early")
			}
			return ev
		case <-time.After(eventually):
			t.Fatalf("no watch event within %v", eventually)
			return watch.Event{}
		}
	}
	ev := next()
	if pom, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Added || !ok || pom.Name != "one" {
		t.Fatalf("first event %s %T %+v, want ADDED PartialObjectMetadata one", ev.Type, ev.Object, ev.Object)
	}
	ev = next()
	pom, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if ev.Type != watch.Bookmark || !ok {
		t.Fatalf("second event %s %T %+v, want a BOOKMARK PartialObjectMetadata", ev.Type, ev.Object, ev.Object)
	}
	if pom.Annotations["k8s.io/initial-events-end"] != "true" || pom.ResourceVersion == "" {
		t.Errorf("BOOKMARK metadata %+v, want the initial-events-end annotation and a resourceVersion", pom.ObjectMeta)
	}
}
