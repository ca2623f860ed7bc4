package e2e

import (
	"context"
	"encoding/json"
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
	// must carry the store's latest revision.
	w := openRawWatch(t, d, "/api/v1/namespaces/kube-system/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion="+cm.ResourceVersion)
	defer w.Close()
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
	if got, want := obj.Metadata.ResourceVersion, cm.ResourceVersion; got != want {
		t.Errorf("bookmark resourceVersion = %s, want %s", got, want)
	}
	if obj.Kind != "ConfigMap" || obj.Metadata.Name != "" {
		t.Errorf("bookmark object = %s, want an empty ConfigMap with only a resourceVersion", ev.Object)
	}
	w.WantEOF()
}
