package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// protoClientset is a clientset that asks for Protobuf, as
// kube-controller-manager and other core components do.
func protoClientset(t *testing.T, d *Daemon) kubernetes.Interface {
	t.Helper()
	cfg := d.RESTConfig()
	cfg.ContentConfig = rest.ContentConfig{
		AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		ContentType:        "application/vnd.kubernetes.protobuf",
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestWatch_Protobuf: a client that asks for Protobuf gets a Protobuf watch
// stream (Content-Type application/vnd.kubernetes.protobuf;stream=watch)
// that client-go decodes: ADDED, MODIFIED, DELETED, BOOKMARK and the 410
// ERROR, with the objects' contents intact.
func TestWatch_Protobuf(t *testing.T) {
	t.Parallel()
	d := startDaemonArgs(t, "--compaction-interval", "1s")
	cs := protoClientset(t, d)
	ctx := context.Background()
	const ns = "proto"
	createNamespace(t, d.Clientset(), ns)

	// The raw answer's Content-Type.
	req := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Param("watch", "1").Param("timeoutSeconds", "1")
	res := req.Do(ctx)
	var ct string
	res.ContentType(&ct)
	if want := "application/vnd.kubernetes.protobuf;stream=watch"; ct != want {
		t.Errorf("watch Content-Type = %q, want %q", ct, want)
	}

	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		typ  watch.EventType
		data string
	}{{watch.Added, "v"}, {watch.Modified, "v2"}, {watch.Deleted, "v2"}} {
		ev := nextEvent(t, w)
		got, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != want.typ || !ok {
			t.Fatalf("event %d: %s %T, want %s *v1.ConfigMap", i, ev.Type, ev.Object, want.typ)
		}
		if got.Name != "a" || got.Data["k"] != want.data || got.Labels["x"] != "1" || got.UID != cm.UID {
			t.Errorf("event %d: %s name %q data %v labels %v uid %s, want a, k=%s, x=1, %s", i, ev.Type, got.Name, got.Data, got.Labels, got.UID, want.data, cm.UID)
		}
	}

	// Watch-list: the initial state, then the BOOKMARK that ends it.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sendInitial := true
	wl, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{SendInitialEvents: &sendInitial,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	defer wl.Stop()
	if ev := nextEvent(t, wl); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "b" {
		t.Fatalf("watch-list: first event %s %v, want ADDED b", ev.Type, ev.Object)
	}
	ev := nextEvent(t, wl)
	bm, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != watch.Bookmark || !ok || bm.Annotations["k8s.io/initial-events-end"] != "true" || bm.ResourceVersion == "" {
		t.Fatalf("watch-list: second event %s %+v, want a ConfigMap BOOKMARK annotated k8s.io/initial-events-end", ev.Type, ev.Object)
	}

	// A watch below the compacted revision ends with the 410 as a Status.
	from := mustRV(t, list.ResourceVersion)
	waitCompactedPast(t, d, d.Clientset(), ns, from)
	old, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from revision 1: %v", err)
	}
	defer old.Stop()
	ev = nextEvent(t, old)
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("watch below the compacted revision: %s %+v, want ERROR with a 410 Expired Status", ev.Type, ev.Object)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended, want an event")
		}
		return ev
	case <-time.After(watchHang):
		t.Fatalf("no event within %v", watchHang)
	}
	return watch.Event{}
}
