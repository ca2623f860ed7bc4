package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// watchContentTypes records the Content-Type of each watch response a
// client receives.
type watchContentTypes struct {
	mu  sync.Mutex
	got []string
}

func (w *watchContentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" {
			w.mu.Lock()
			w.got = append(w.got, resp.Header.Get("Content-Type"))
			w.mu.Unlock()
		}
		return resp, err
	})
}

func (w *watchContentTypes) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.got, ", ")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWatch_WatchListMetadata: a watch-list of PartialObjectMetadata (the
// metadata informers of client-go and controller-runtime's OnlyMetadata
// watches), of a built-in kind and of a custom resource, answers in
// Protobuf as client-go's metadata client asks first, and ends its
// initial events with a BOOKMARK that is itself a PartialObjectMetadata,
// as kube-apiserver transforms every event object of the watch. With the
// kind's own object there instead, the metadata client cannot decode the
// bookmark, and its reflector falls back to a LIST.
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
	if res := d.KubectlStdin(widgetCRDYAML, "apply", "-f", "-"); res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	waitEstablished(t, d, "60s", "widgets.demo.example.com")
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "demo.example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "one"},
		"spec":     map[string]interface{}{"size": int64(1)},
	}}
	if _, err := d.Dynamic().Resource(widgetGVR).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, widgetGVR} {
		t.Run(gvr.Resource, func(t *testing.T) {
			types := &watchContentTypes{}
			cfg := d.RESTConfig()
			cfg.WrapTransport = types.wrap
			mc, err := metadata.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			send := true
			wi, err := mc.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{
				SendInitialEvents:    &send,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				AllowWatchBookmarks:  true,
			})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer wi.Stop()
			if got, want := types.String(), "application/vnd.kubernetes.protobuf;stream=watch"; got != want {
				t.Errorf("watch Content-Type %q, want %q", got, want)
			}
			next := func() watch.Event {
				t.Helper()
				select {
				case ev, ok := <-wi.ResultChan():
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
			// A live event follows, in the same form.
			if _, err := mc.Resource(gvr).Namespace(ns).Patch(ctx, "one", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patch: %v", err)
			}
			ev = next()
			if pom, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Modified || !ok || pom.Labels["seen"] != "yes" {
				t.Fatalf("live event %s %T %+v, want MODIFIED PartialObjectMetadata with the label", ev.Type, ev.Object, ev.Object)
			}
		})
	}
}
