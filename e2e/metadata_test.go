package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// Accept headers for the server-side conversions.
const (
	acceptTableV1      = "application/json;as=Table;v=v1;g=meta.k8s.io"
	acceptTableV1beta1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
	acceptPOM          = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	acceptPOMList      = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
)

// reprKinds are one collection of every served kind, with an object to
// create in it.
var reprKinds = []struct {
	name, path, body string
}{
	{"configmaps", "/api/v1/namespaces/repr/configmaps",
		`{"metadata":{"name":"%s","labels":{"app":"x"},"annotations":{"note":"n"}},"data":{"k":"v"}}`},
	{"secrets", "/api/v1/namespaces/repr/secrets",
		`{"metadata":{"name":"%s","labels":{"app":"x"}},"stringData":{"k":"v"}}`},
	{"leases", "/apis/coordination.k8s.io/v1/namespaces/repr/leases",
		`{"metadata":{"name":"%s","labels":{"app":"x"}},"spec":{"holderIdentity":"me"}}`},
	{"events", "/api/v1/namespaces/repr/events",
		`{"metadata":{"name":"%s","labels":{"app":"x"}},"involvedObject":{"kind":"ConfigMap","namespace":"repr","name":"a"},"reason":"R","message":"m","type":"Normal","source":{"component":"t"}}`},
	{"events.events.k8s.io", "/apis/events.k8s.io/v1/namespaces/repr/events", ""},
	{"namespaces", "/api/v1/namespaces", `{"metadata":{"name":"%s","labels":{"app":"x"}}}`},
}

// jsonMap decodes b, failing the test if it is not a JSON object.
func jsonMap(t *testing.T, what string, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", what, err, b)
	}
	return m
}

func items(m map[string]any) []any {
	l, _ := m["items"].([]any)
	return l
}

func jsonAt(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestRepresentation_PartialObjectMetadataAndTable checks the
// PartialObjectMetadata and Table answers of every kind item by item
// against the plain answer, as kube-apiserver builds them: the same
// metadata for each item in the same order, kind and apiVersion on each
// PartialObjectMetadata (list items included), Table rows with one cell
// per column, the name in the column of format "name", and the object as
// the includeObject policy asks.
func TestRepresentation_PartialObjectMetadataAndTable(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "repr")
	for _, k := range reprKinds {
		if k.body == "" {
			continue
		}
		for i := 0; i < 3; i++ {
			name := fmt.Sprintf("repr-%s-%d", k.name[:3], i)
			res := doRaw(t, d, http.MethodPost, k.path, "application/json", "application/json", []byte(fmt.Sprintf(k.body, name)))
			if res.Status != http.StatusCreated {
				t.Fatalf("create %s %s: %d %s", k.name, name, res.Status, res.Body)
			}
		}
	}

	for _, k := range reprKinds {
		t.Run(k.name, func(t *testing.T) {
			plain := jsonMap(t, "list", doRaw(t, d, http.MethodGet, k.path, "", "application/json", nil).Body)
			want := items(plain)
			if len(want) < 3 {
				t.Fatalf("list: %d items, want at least 3", len(want))
			}
			rv := jsonAt(plain, "metadata", "resourceVersion")

			// PartialObjectMetadataList: the same metadata, item by item.
			res := doRaw(t, d, http.MethodGet, k.path, "", acceptPOMList, nil)
			pom := jsonMap(t, "metadata list", res.Body)
			if res.Status != 200 || pom["kind"] != "PartialObjectMetadataList" || pom["apiVersion"] != "meta.k8s.io/v1" {
				t.Fatalf("metadata list: %d kind %v apiVersion %v", res.Status, pom["kind"], pom["apiVersion"])
			}
			if got := jsonAt(pom, "metadata", "resourceVersion"); got != rv && !(onEtcd() && rvNotOlder(got, rv)) {
				t.Errorf("metadata list resourceVersion %v, want %v", got, rv)
			}
			got := items(pom)
			if len(got) != len(want) {
				t.Fatalf("metadata list: %d items, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(jsonAt(got[i], "metadata"), jsonAt(want[i], "metadata")) {
					t.Errorf("metadata list item %d:\ngot  %v\nwant %v", i, jsonAt(got[i], "metadata"), jsonAt(want[i], "metadata"))
				}
				if jsonAt(got[i], "kind") != "PartialObjectMetadata" || jsonAt(got[i], "apiVersion") != "meta.k8s.io/v1" {
					t.Errorf("metadata list item %d: kind %v apiVersion %v, want PartialObjectMetadata meta.k8s.io/v1",
						i, jsonAt(got[i], "kind"), jsonAt(got[i], "apiVersion"))
				}
			}

			// PartialObjectMetadata of one object.
			name := jsonAt(want[0], "metadata", "name").(string)
			one := jsonMap(t, "get", doRaw(t, d, http.MethodGet, k.path+"/"+name, "", "application/json", nil).Body)
			res = doRaw(t, d, http.MethodGet, k.path+"/"+name, "", acceptPOM, nil)
			p := jsonMap(t, "metadata get", res.Body)
			if res.Status != 200 || p["kind"] != "PartialObjectMetadata" || p["apiVersion"] != "meta.k8s.io/v1" ||
				!reflect.DeepEqual(p["metadata"], one["metadata"]) {
				t.Errorf("metadata get: %d %s", res.Status, res.Body)
			}

			// Tables: one row per item, one cell per column, the name first.
			for _, tt := range []struct {
				accept, include, apiVersion string
			}{
				{acceptTableV1, "", "meta.k8s.io/v1"},
				{acceptTableV1, "Metadata", "meta.k8s.io/v1"},
				{acceptTableV1, "Object", "meta.k8s.io/v1"},
				{acceptTableV1, "None", "meta.k8s.io/v1"},
				{acceptTableV1beta1, "", "meta.k8s.io/v1beta1"},
			} {
				res := doRaw(t, d, http.MethodGet, k.path+"?includeObject="+tt.include, "", tt.accept, nil)
				tab := jsonMap(t, "table", res.Body)
				if res.Status != 200 || tab["kind"] != "Table" || tab["apiVersion"] != tt.apiVersion {
					t.Fatalf("table %s include %q: %d kind %v apiVersion %v", tt.accept, tt.include, res.Status, tab["kind"], tab["apiVersion"])
				}
				if got := jsonAt(tab, "metadata", "resourceVersion"); got != rv && !(onEtcd() && rvNotOlder(got, rv)) {
					// On etcd a list's revision is the cluster's, which
					// writes anywhere on it advance.
					t.Errorf("table resourceVersion %v, want %v", got, rv)
				}
				cols, _ := tab["columnDefinitions"].([]any)
				rows, _ := tab["rows"].([]any)
				if len(rows) != len(want) || len(cols) == 0 {
					t.Fatalf("table include %q: %d rows and %d columns, want %d rows", tt.include, len(rows), len(cols), len(want))
				}
				// The name is in the column of format "name": first for most
				// kinds, last for Events, as kube-apiserver's printers have it.
				nameCol := -1
				for i, c := range cols {
					if jsonAt(c, "format") == "name" {
						nameCol = i
					}
				}
				if nameCol < 0 {
					t.Fatalf("table: no column of format name in %v", cols)
				}
				for i, row := range rows {
					cells, _ := jsonAt(row, "cells").([]any)
					wantName := jsonAt(want[i], "metadata", "name")
					if len(cells) != len(cols) || cells[nameCol] != wantName {
						t.Errorf("table row %d: cells %v for %d columns, want %v in column %d", i, cells, len(cols), wantName, nameCol)
					}
					obj := jsonAt(row, "object")
					switch tt.include {
					case "", "Metadata":
						if jsonAt(obj, "kind") != "PartialObjectMetadata" || jsonAt(obj, "apiVersion") != tt.apiVersion ||
							!reflect.DeepEqual(jsonAt(obj, "metadata"), jsonAt(want[i], "metadata")) {
							t.Errorf("table row %d object (include %q): %v", i, tt.include, obj)
						}
					case "Object":
						wantObj := want[i].(map[string]any)
						if jsonAt(obj, "metadata", "name") != wantName || !reflect.DeepEqual(jsonAt(obj, "metadata"), wantObj["metadata"]) ||
							jsonAt(obj, "kind") == nil {
							t.Errorf("table row %d object (include Object): %v, want %v", i, obj, wantObj)
						}
					case "None":
						if obj != nil {
							t.Errorf("table row %d object (include None): %v, want none", i, obj)
						}
					}
				}
			}
		})
	}
}

// TestRepresentation_ConversionErrors checks kube-apiserver's answers to
// conversions that do not fit: an invalid includeObject is a 400 from
// the Table options, PartialObjectMetadata of a list and
// PartialObjectMetadataList of one object are 406, and a Table is not
// offered as Protobuf.
func TestRepresentation_ConversionErrors(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "repr")
	base := "/api/v1/namespaces/repr/configmaps"
	if res := doRaw(t, d, http.MethodPost, base, "application/json", "", []byte(`{"metadata":{"name":"a"}}`)); res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	includeMsg := `Unable to convert to Table as requested: includeObject: Invalid value: "Foo": must be 'Metadata', 'Object', 'None', or empty`
	tests := []struct {
		name, path, accept string
		code               int32
		reason             metav1.StatusReason
		message            string
	}{
		{"includeObject on a list", base + "?includeObject=Foo", acceptTableV1, 400, metav1.StatusReasonBadRequest, includeMsg},
		{"includeObject on a get", base + "/a?includeObject=Foo", acceptTableV1, 400, metav1.StatusReasonBadRequest, includeMsg},
		{"includeObject on a watch", base + "?watch=1&includeObject=Foo&timeoutSeconds=1", acceptTableV1, 400, metav1.StatusReasonBadRequest, includeMsg},
		{"includeObject on a missing object", base + "/missing?includeObject=Foo", acceptTableV1, 404, metav1.StatusReasonNotFound, `configmaps "missing" not found`},
		{"PartialObjectMetadata of a list", base, acceptPOM, 406, metav1.StatusReasonNotAcceptable,
			"you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"},
		{"PartialObjectMetadataList of an object", base + "/a", acceptPOMList, 406, metav1.StatusReasonNotAcceptable,
			"you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"},
		{"PartialObjectMetadata of a lease list", "/apis/coordination.k8s.io/v1/namespaces/repr/leases", acceptPOM, 406, metav1.StatusReasonNotAcceptable,
			"you requested PartialObjectMetadata, but the requested object is a list (*coordination.LeaseList)"},
		{"Table as Protobuf", base, "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", 406, metav1.StatusReasonNotAcceptable,
			"406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := doRaw(t, d, http.MethodGet, tt.path, "", tt.accept, nil)
			var st metav1.Status
			if err := json.Unmarshal(res.Body, &st); err != nil || st.Kind != "Status" {
				t.Fatalf("got %d %s, want a Status", res.Status, res.Body)
			}
			if res.Status != int(tt.code) || st.Code != tt.code || st.Reason != tt.reason || st.Message != tt.message {
				t.Errorf("got %d %s %q, want %d %s %q", res.Status, st.Reason, st.Message, tt.code, tt.reason, tt.message)
			}
		})
	}
	// A Table as Protobuf is skipped for the next clause.
	res := doRaw(t, d, http.MethodGet, base, "", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json", nil)
	if got := jsonMap(t, "list", res.Body)["kind"]; res.Status != 200 || got != "ConfigMapList" {
		t.Errorf("Table as Protobuf, then JSON: %d kind %v, want 200 ConfigMapList", res.Status, got)
	}
}

// TestMetadataClient_ListWatch drives client-go's metadata client, which
// controller-runtime uses for metadata-only caches: a list whose items
// carry the objects' metadata, and a watch whose events carry
// PartialObjectMetadata for an add, an update and a delete.
func TestMetadataClient_ListWatch(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	createNamespace(t, cs, "meta")
	mc, err := metadata.NewForConfig(d.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	res := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/meta/configmaps", "application/json", "",
		[]byte(`{"metadata":{"name":"a","labels":{"l":"1"},"finalizers":["example.com/f"]}}`))
	if res.Status != 201 {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	list, err := mc.Resource(gvr).Namespace("meta").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("metadata list: %v", err)
	}
	typed, err := cs.CoreV1().ConfigMaps("meta").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || !reflect.DeepEqual(list.Items[0].ObjectMeta, typed.ObjectMeta) {
		t.Fatalf("metadata list: %+v, want the metadata of %+v", list.Items, typed.ObjectMeta)
	}

	w, err := mc.Resource(gvr).Namespace("meta").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("metadata watch: %v", err)
	}
	defer w.Stop()
	if res := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/meta/configmaps", "application/json", "", []byte(`{"metadata":{"name":"b"}}`)); res.Status != 201 {
		t.Fatalf("create b: %d %s", res.Status, res.Body)
	}
	if res := doRaw(t, d, http.MethodPatch, "/api/v1/namespaces/meta/configmaps/a", "application/merge-patch+json", "",
		[]byte(`{"metadata":{"finalizers":null,"labels":{"l":"2"}}}`)); res.Status != 200 {
		t.Fatalf("patch a: %d %s", res.Status, res.Body)
	}
	if res := doRaw(t, d, http.MethodDelete, "/api/v1/namespaces/meta/configmaps/a", "", "", nil); res.Status != 200 {
		t.Fatalf("delete a: %d %s", res.Status, res.Body)
	}
	wantEvents := []struct {
		typ   watch.EventType
		name  string
		label string
	}{{watch.Added, "b", ""}, {watch.Modified, "a", "2"}, {watch.Deleted, "a", "2"}}
	timeout := time.After(eventually)
	for i, want := range wantEvents {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", i)
			}
			p, isPOM := ev.Object.(*metav1.PartialObjectMetadata)
			if !isPOM || ev.Type != want.typ || p.Name != want.name || p.Labels["l"] != want.label || p.ResourceVersion == "" {
				t.Errorf("event %d: %s %T %+v, want %s %s", i, ev.Type, ev.Object, ev.Object, want.typ, want.name)
			}
		case <-timeout:
			t.Fatalf("watch: event %d not received within %v", i, eventually)
		}
	}
}
