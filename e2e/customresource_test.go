package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// Custom resources served from CustomResourceDefinitions. Each test applies
// testdata/crds.yaml with kubectl and waits for the CRDs to be
// established: CronTab
// (stable.example.com, namespaced, v1 stored and v1beta1 deprecated, with
// status and scale subresources, printer columns, a selectable field, list
// types, defaults and a CEL rule) and Widget (things.example.org,
// cluster-scoped). Expected answers are kube-apiserver 1.36's, from its
// code (apiextensions-apiserver's customresource handler and strategy).

var (
	cronTabs = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	widgets  = schema.GroupVersionResource{Group: "things.example.org", Version: "v1alpha1", Resource: "widgets"}
)

// startCRDaemon starts edgeapi and creates the CRDs of testdata/crds.yaml,
// as a user would: kubectl apply, then kubectl wait for Established.
func startCRDaemon(t *testing.T, opts ...DaemonOptions) *Daemon {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := StartDaemon(t, opts...)
	applyCRDs(t, d, path, "crontabs.stable.example.com", "widgets.things.example.org")
	return d
}

// applyCRDs applies the CRD file at path and waits until the named CRDs
// are established.
func applyCRDs(t *testing.T, d *Daemon, path string, names ...string) {
	t.Helper()
	d.MustKubectl("apply", "-f", path)
	waitEstablished(t, d, "60s", names...)
}

// cronTab returns a CronTab object for the dynamic client.
func cronTab(name string, spec map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "stable.example.com/v1",
		"kind":       "CronTab",
		"metadata":   map[string]interface{}{"name": name},
		"spec":       spec,
	}}
}

func nested(t *testing.T, u *unstructured.Unstructured, path ...string) interface{} {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(path, "."), err)
	}
	return v
}

// TestCustomResource_Kubectl drives a CronTab through kubectl: apply, get
// with printer columns, short name and category, -o yaml with defaults
// applied and unknown fields pruned, merge and JSON patches, a strategic
// merge patch refused, and delete.
func TestCustomResource_Kubectl(t *testing.T) {
	d := startCRDaemon(t)
	createNamespace(t, d.Clientset(), "cr-kubectl")
	manifest := `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
  namespace: cr-kubectl
spec:
  cronSpec: "0 3 * * *"
  image: backup
  unknownField: dropped
`
	// --validate=warn: kubectl's default (Strict) refuses the unknown field.
	res := d.KubectlStdin(manifest, "apply", "-f", "-")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.unknownField"`) {
		t.Errorf("kubectl apply (fieldValidation=Strict): want the 400 naming spec.unknownField\n%s", res)
	}
	res = d.KubectlStdin(manifest, "apply", "--validate=warn", "-f", "-")
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	if !strings.Contains(res.Stderr, `unknown field "spec.unknownField"`) {
		t.Errorf("kubectl apply: stderr lacks the unknown-field warning:\n%s", res.Stderr)
	}
	wantOutput(t, res, "crontab.stable.example.com/nightly created\n")

	// The SPEC cells hold spaces: rows are compared without the AGE
	// field, the last.
	header := []string{"NAME", "SPEC", "REPLICAS", "AGE"}
	row := []string{"nightly", "0", "3", "*", "*", "*", "1"}
	wantCRTable(t, d.Kubectl("-n", "cr-kubectl", "get", "crontabs"), header, row)
	wantCRTable(t, d.Kubectl("-n", "cr-kubectl", "get", "ct"), header, row)
	wantCRTable(t, d.Kubectl("-n", "cr-kubectl", "get", "schedules"), header, row)

	res = d.MustKubectl("-n", "cr-kubectl", "get", "ct", "nightly", "-o", "json")
	var got unstructured.Unstructured
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(res.Stdout), &m); err != nil {
		t.Fatalf("decode kubectl get -o json: %v\n%s", err, res.Stdout)
	}
	got.Object = normalizeNumbers(m).(map[string]interface{})
	wantSpec := map[string]interface{}{
		"cronSpec": "0 3 * * *", "image": "backup",
		// Defaults from the schema.
		"replicas": int64(1), "minReplicas": int64(0), "mode": "Slow",
	}
	if spec := nested(t, &got, "spec"); !reflect.DeepEqual(normalizeNumbers(spec), wantSpec) {
		t.Errorf("spec = %v, want %v (defaults applied, unknownField pruned)", spec, wantSpec)
	}
	if g := got.GetGeneration(); g != 1 {
		t.Errorf("generation = %d, want 1", g)
	}

	d.MustKubectl("-n", "cr-kubectl", "patch", "ct", "nightly", "--type", "merge", "-p", `{"spec":{"replicas":3}}`)
	d.MustKubectl("-n", "cr-kubectl", "patch", "ct", "nightly", "--type", "json", "-p", `[{"op":"replace","path":"/spec/image","value":"restore"}]`)
	wantCRTable(t, d.Kubectl("-n", "cr-kubectl", "get", "ct", "nightly"), header, []string{"nightly", "0", "3", "*", "*", "*", "3"})
	res = d.MustKubectl("-n", "cr-kubectl", "get", "ct", "nightly", "-o", "jsonpath={.spec.image} {.metadata.generation}")
	if res.Stdout != "restore 3" {
		t.Errorf("after two patches: image and generation = %q, want %q", res.Stdout, "restore 3")
	}

	// Applying a changed manifest patches (kubectl sends a merge patch:
	// it has no schema for the kind).
	wantOutput(t, d.KubectlStdin(strings.Replace(manifest, "image: backup", "image: restore2", 1), "apply", "--validate=false", "-f", "-"),
		"crontab.stable.example.com/nightly configured\n")

	// create, and get -o yaml.
	wantOutput(t, d.KubectlStdin(strings.Replace(strings.Replace(manifest, "nightly", "hourly", 1), "  unknownField: dropped\n", "status:\n  phase: Set\n", 1), "create", "-f", "-"),
		"crontab.stable.example.com/hourly created\n")
	res = d.MustKubectl("-n", "cr-kubectl", "get", "ct", "hourly", "-o", "yaml")
	for _, want := range []string{"apiVersion: stable.example.com/v1\n", "kind: CronTab\n", "  name: hourly\n", "  mode: Slow\n", "  replicas: 1\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("kubectl get -o yaml lacks %q:\n%s", want, res.Stdout)
		}
	}
	if strings.Contains(res.Stdout, "status:") {
		t.Errorf("kubectl get -o yaml shows a status that create must drop:\n%s", res.Stdout)
	}

	// The scale subresource.
	wantOutput(t, d.Kubectl("-n", "cr-kubectl", "scale", "ct", "nightly", "--replicas", "5"), "crontab.stable.example.com/nightly scaled\n")
	wantOutput(t, d.Kubectl("-n", "cr-kubectl", "get", "ct", "nightly", "-o", "jsonpath={.spec.replicas} {.spec.image} {.metadata.generation}"), "5 restore2 5")

	res = d.Kubectl("-n", "cr-kubectl", "patch", "ct", "nightly", "-p", `{"spec":{"replicas":4}}`)
	wantMsg := "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, wantMsg) {
		t.Errorf("strategic merge patch: want a failure naming %q\n%s", wantMsg, res)
	}

	res = d.Kubectl("-n", "cr-kubectl", "patch", "ct", "nightly", "--type", "merge", "-p", `{"spec":{"replicas":11}}`)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`) {
		t.Errorf("invalid merge patch: want the schema's 422 cause\n%s", res)
	}

	wantOutput(t, d.Kubectl("-n", "cr-kubectl", "delete", "ct", "nightly"), "crontab.stable.example.com \"nightly\" deleted from cr-kubectl namespace\n")
	res = d.Kubectl("-n", "cr-kubectl", "get", "ct", "nightly")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `crontabs.stable.example.com "nightly" not found`) {
		t.Errorf("get after delete: want NotFound\n%s", res)
	}
}

// wantCRTable checks the header and the rows, without their last field
// (AGE), of `kubectl get` output.
func wantCRTable(t *testing.T, res KubectlResult, header []string, rows ...[]string) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	got := table(res.Stdout)
	if len(got) == 0 || !reflect.DeepEqual(got[0], header) {
		t.Fatalf("kubectl %s: header of %q, want %q", strings.Join(res.Args, " "), res.Stdout, header)
	}
	var gotRows [][]string
	for _, r := range got[1:] {
		gotRows = append(gotRows, r[:len(r)-1])
	}
	if !reflect.DeepEqual(gotRows, rows) {
		t.Errorf("kubectl %s: rows (without AGE) = %q, want %q", strings.Join(res.Args, " "), gotRows, rows)
	}
}

// normalizeNumbers turns the float64 numbers of JSON decoded into
// interface{} into int64 when they are whole, as the dynamic client
// decodes them.
func normalizeNumbers(v interface{}) interface{} {
	switch v := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, e := range v {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, e := range v {
			out[i] = normalizeNumbers(e)
		}
		return out
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}

// TestCustomResource_Dynamic uses client-go's dynamic client: create,
// list with paging and selectors, watch, status updates through the
// subresource, conflicts, and validation.
func TestCustomResource_Dynamic(t *testing.T) {
	d := startCRDaemon(t)
	ctx := context.Background()
	createNamespace(t, d.Clientset(), "cr-dyn")
	rc := d.Dynamic().Resource(cronTabs).Namespace("cr-dyn")

	w, err := rc.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	images := []string{"a", "b", "a", "c", "a"}
	for i, img := range images {
		obj := cronTab("ct-"+string(rune('0'+i)), map[string]interface{}{"image": img, "replicas": int64(i + 1)})
		obj.SetLabels(map[string]string{"parity": []string{"even", "odd"}[i%2]})
		if _, err := rc.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}

	// Paging: 5 objects, 2 per page.
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	for {
		l, err := rc.List(ctx, opts)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		pages++
		for _, it := range l.Items {
			names = append(names, it.GetName())
			if it.GetKind() != "CronTab" || it.GetAPIVersion() != "stable.example.com/v1" {
				t.Errorf("list item %s: kind %q apiVersion %q, want CronTab stable.example.com/v1", it.GetName(), it.GetKind(), it.GetAPIVersion())
			}
		}
		if l.GetContinue() == "" {
			break
		}
		opts.Continue = l.GetContinue()
	}
	if want := []string{"ct-0", "ct-1", "ct-2", "ct-3", "ct-4"}; !reflect.DeepEqual(names, want) || pages != 3 {
		t.Errorf("paged list: %v in %d pages, want %v in 3", names, pages, want)
	}

	l, err := rc.List(ctx, metav1.ListOptions{FieldSelector: "spec.image=a", LabelSelector: "parity=even"})
	if err != nil {
		t.Fatalf("list with selectors: %v", err)
	}
	if got := itemNames(l); !reflect.DeepEqual(got, []string{"ct-0", "ct-2", "ct-4"}) {
		t.Errorf("spec.image=a,parity=even: %v, want [ct-0 ct-2 ct-4]", got)
	}
	_, err = rc.List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"})
	if st := apiStatus(t, err); st.Code != http.StatusBadRequest || st.Message != "field label not supported: spec.replicas" {
		t.Errorf("unknown field selector: %d %q, want 400 %q", st.Code, st.Message, "field label not supported: spec.replicas")
	}

	for i := range images {
		ev := nextCREvent(t, w)
		if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "ct-"+string(rune('0'+i)) {
			t.Fatalf("watch event %d: %s %v, want ADDED ct-%d", i, ev.Type, ev.Object, i)
		}
	}

	// Status through the subresource: the main resource ignores status,
	// and status writes leave spec alone and keep the generation.
	cur, err := rc.Get(ctx, "ct-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Object["status"] = map[string]interface{}{"phase": "Running", "replicas": int64(1)}
	if err := unstructured.SetNestedField(cur.Object, int64(7), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	st, err := rc.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if got := nested(t, st, "status", "phase"); got != "Running" {
		t.Errorf("status.phase after UpdateStatus = %v, want Running", got)
	}
	if got := nested(t, st, "spec", "replicas"); got != int64(1) {
		t.Errorf("spec.replicas after UpdateStatus = %v, want 1 (unchanged)", got)
	}
	if st.GetGeneration() != 1 {
		t.Errorf("generation after UpdateStatus = %d, want 1", st.GetGeneration())
	}
	ev := nextCREvent(t, w)
	if ev.Type != watch.Modified || nested(t, ev.Object.(*unstructured.Unstructured), "status", "phase") != "Running" {
		t.Errorf("watch after UpdateStatus: %s %v, want MODIFIED with status.phase Running", ev.Type, ev.Object)
	}

	st.Object["status"] = map[string]interface{}{"phase": "Ignored"}
	if err := unstructured.SetNestedField(st.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	up, err := rc.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := nested(t, up, "status", "phase"); got != "Running" {
		t.Errorf("status.phase after Update = %v, want Running (the main resource ignores status)", got)
	}
	if up.GetGeneration() != 2 {
		t.Errorf("generation after a spec change = %d, want 2", up.GetGeneration())
	}

	// A stale resourceVersion is a conflict.
	_, err = rc.Update(ctx, st, metav1.UpdateOptions{})
	if s := apiStatus(t, err); s.Code != http.StatusConflict ||
		s.Message != `Operation cannot be fulfilled on crontabs.stable.example.com "ct-0": the object has been modified; please apply your changes to the latest version and try again` {
		t.Errorf("stale update: %d %q, want 409 with kube-apiserver's message", s.Code, s.Message)
	}

	// PUT without resourceVersion is refused (AllowUnconditionalUpdate is
	// false for custom resources).
	noRV := up.DeepCopy()
	noRV.SetResourceVersion("")
	_, err = rc.Update(ctx, noRV, metav1.UpdateOptions{})
	if s := apiStatus(t, err); s.Code != http.StatusUnprocessableEntity ||
		s.Message != `CronTab.stable.example.com "ct-0" is invalid: metadata.resourceVersion: Invalid value: "": must be specified for an update` {
		t.Errorf("update without resourceVersion: %d %q", s.Code, s.Message)
	}

	// Schema violations: one cause per violation, nothing stored.
	bad := cronTab("bad", map[string]interface{}{"image": strings.Repeat("x", 21), "replicas": int64(0), "mode": "Medium", "ports": []interface{}{
		map[string]interface{}{"name": "http", "port": int64(80)}, map[string]interface{}{"name": "http", "port": int64(81)},
	}})
	_, err = rc.Create(ctx, bad, metav1.CreateOptions{})
	s := apiStatus(t, err)
	// The OpenAPI validator walks properties in map order, in
	// kube-apiserver too: the causes are compared as a set.
	wantCauses := []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation", Field: "<nil>"},
		{Type: metav1.CauseTypeTooLong, Message: "Too long: may not be more than 20 bytes", Field: "spec.image"},
		{Type: metav1.CauseTypeFieldValueNotSupported, Message: `Unsupported value: "Medium": supported values: "Fast", "Slow"`, Field: "spec.mode"},
		{Type: metav1.CauseTypeFieldValueDuplicate, Message: `Duplicate value: {"name":"http"}`, Field: "spec.ports[1]"},
		{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: spec.replicas in body should be greater than or equal to 1", Field: "spec.replicas"},
	}
	if s.Details != nil {
		sort.Slice(s.Details.Causes, func(i, j int) bool { return s.Details.Causes[i].Field < s.Details.Causes[j].Field })
	}
	if s.Code != http.StatusUnprocessableEntity || s.Details == nil || !reflect.DeepEqual(s.Details.Causes, wantCauses) {
		t.Errorf("invalid create: %d %q causes\n%#v\nwant\n%#v", s.Code, s.Message, s.Details, wantCauses)
	}
	if _, err := rc.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of the invalid object: %v, want NotFound", err)
	}

	// A CEL rule (x-kubernetes-validations) with messageExpression.
	_, err = rc.Create(ctx, cronTab("cel", map[string]interface{}{"replicas": int64(2), "minReplicas": int64(3)}), metav1.CreateOptions{})
	s = apiStatus(t, err)
	if s.Code != http.StatusUnprocessableEntity || s.Message != `CronTab.stable.example.com "cel" is invalid: spec: Invalid value: minReplicas (3) must not exceed replicas (2)` {
		t.Errorf("CEL rule: %d %q", s.Code, s.Message)
	}

	// Delete shows in the watch.
	if err := rc.Delete(ctx, "ct-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for {
		ev := nextCREvent(t, w)
		if ev.Type == watch.Modified {
			continue // the update above
		}
		if ev.Type != watch.Deleted || ev.Object.(*unstructured.Unstructured).GetName() != "ct-1" {
			t.Errorf("watch: %s %v, want DELETED ct-1", ev.Type, ev.Object)
		}
		break
	}
}

func itemNames(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.GetName())
	}
	return out
}

func nextCREvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(requestTimeout):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

// TestCustomResource_Apply: server-side apply with a type converter built
// from the CRD schema. Two managers merge a map list (x-kubernetes-list-type
// map) element by element and a set, conflict on the same scalar, and a
// forced apply takes the field over. Fields under
// x-kubernetes-preserve-unknown-fields are kept and tracked.
func TestCustomResource_Apply(t *testing.T) {
	d := startCRDaemon(t)
	ctx := context.Background()
	createNamespace(t, d.Clientset(), "cr-apply")
	rc := d.Dynamic().Resource(cronTabs).Namespace("cr-apply")

	apply := func(manager string, force bool, spec map[string]interface{}) (*unstructured.Unstructured, error) {
		return rc.Apply(ctx, "shared", cronTab("shared", spec), metav1.ApplyOptions{FieldManager: manager, Force: force})
	}
	if _, err := apply("alice", false, map[string]interface{}{
		"image": "one", "tags": []interface{}{"a"},
		"ports": []interface{}{map[string]interface{}{"name": "http", "port": int64(80)}},
		"extra": map[string]interface{}{"anything": map[string]interface{}{"goes": true}},
	}); err != nil {
		t.Fatalf("apply by alice: %v", err)
	}
	got, err := apply("bob", false, map[string]interface{}{
		"tags":  []interface{}{"b"},
		"ports": []interface{}{map[string]interface{}{"name": "https", "port": int64(443)}},
	})
	if err != nil {
		t.Fatalf("apply by bob: %v", err)
	}
	wantPorts := []interface{}{
		map[string]interface{}{"name": "http", "port": int64(80)},
		map[string]interface{}{"name": "https", "port": int64(443)},
	}
	if ports := nested(t, got, "spec", "ports"); !reflect.DeepEqual(ports, wantPorts) {
		t.Errorf("ports after two managers = %v, want %v (merged by name)", ports, wantPorts)
	}
	if tags := nested(t, got, "spec", "tags"); !reflect.DeepEqual(tags, []interface{}{"a", "b"}) {
		t.Errorf("tags = %v, want [a b] (a set)", tags)
	}
	if extra := nested(t, got, "spec", "extra", "anything", "goes"); extra != true {
		t.Errorf("spec.extra.anything.goes = %v, want true (preserved unknown fields)", extra)
	}
	managers := map[string]string{}
	for _, e := range got.GetManagedFields() {
		managers[e.Manager] = string(e.FieldsV1.Raw)
	}
	if !strings.Contains(managers["alice"], `"k:{\"name\":\"http\"}"`) || !strings.Contains(managers["bob"], `"k:{\"name\":\"https\"}"`) ||
		!strings.Contains(managers["alice"], `"f:goes"`) {
		t.Errorf("managedFields do not track list entries by key or preserved fields: %v", managers)
	}

	_, err = apply("bob", false, map[string]interface{}{"image": "two"})
	s := apiStatus(t, err)
	if s.Code != http.StatusConflict || s.Message != `Apply failed with 1 conflict: conflict with "alice": .spec.image` {
		t.Errorf("conflicting apply: %d %q", s.Code, s.Message)
	}
	got, err = apply("bob", true, map[string]interface{}{"image": "two"})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if img := nested(t, got, "spec", "image"); img != "two" {
		t.Errorf("image after forced apply = %v, want two", img)
	}
	// bob's apply no longer names his port or tag: they go, alice's stay.
	if ports := nested(t, got, "spec", "ports"); !reflect.DeepEqual(ports, wantPorts[:1]) {
		t.Errorf("ports after bob's second apply = %v, want %v", ports, wantPorts[:1])
	}
}

// TestCustomResource_HTTP checks answers a client library would hide:
// Protobuf refused with 406, strategic merge patch with 415, strict and
// warned unknown fields, the deprecated version's warning and the same
// object read through it, PartialObjectMetadata and Table, cluster scope.
func TestCustomResource_HTTP(t *testing.T) {
	d := startCRDaemon(t)
	createNamespace(t, d.Clientset(), "cr-http")
	base := "/apis/stable.example.com/v1/namespaces/cr-http/crontabs"
	body := []byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"h"},"spec":{"image":"i","junk":1},"status":{"phase":"x"}}`)

	res := doRaw(t, d, "POST", base+"?fieldValidation=Strict", "application/json", "", body)
	wantRawStatus(t, "strict unknown field", res, http.StatusBadRequest, `CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.junk"`)

	res = doRaw(t, d, "POST", base, "application/json", "", body)
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	if w := res.Header.Values("Warning"); !reflect.DeepEqual(w, []string{`299 - "unknown field \"spec.junk\""`}) {
		t.Errorf("create: Warning headers %q, want the unknown field", w)
	}
	var created map[string]interface{}
	if err := json.Unmarshal(res.Body, &created); err != nil {
		t.Fatal(err)
	}
	if _, ok := created["status"]; ok {
		t.Errorf("create kept status with the status subresource on: %s", res.Body)
	}

	// The 406 Status itself is JSON: kube-apiserver has no Protobuf
	// serializer for a custom resource, its Status included.
	const notAcceptable = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	res = doRaw(t, d, "GET", base+"/h", "", "application/vnd.kubernetes.protobuf", nil)
	wantRawStatus(t, "GET with Accept Protobuf", res, http.StatusNotAcceptable, notAcceptable)
	res = doRaw(t, d, "GET", base+"/h", "", "application/vnd.kubernetes.protobuf;q=1, application/json;q=0.5", nil)
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET with Accept Protobuf then JSON: %d %s, want 200 JSON", res.Status, res.Header.Get("Content-Type"))
	}
	wantStatusJSON := func(what string, res httpResult, code int, msg string) {
		t.Helper()
		wantRawStatus(t, what, res, code, msg)
	}
	res = doRaw(t, d, "GET", base, "", "application/vnd.kubernetes.protobuf", nil)
	wantRawStatus(t, "LIST with Accept Protobuf", res, http.StatusNotAcceptable, notAcceptable)
	res = doRaw(t, d, "GET", base+"/missing", "", "application/vnd.kubernetes.protobuf", nil)
	if res.Status != http.StatusNotAcceptable || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET of a missing object with Accept Protobuf: %d %s, want 406 as JSON", res.Status, res.Header.Get("Content-Type"))
	}
	res = doRaw(t, d, "GET", base+"/h", "", "text/html", nil)
	wantStatusJSON("GET with Accept text/html", res, http.StatusNotAcceptable,
		"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")

	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "stable.example.com/v1", Kind: "CronTab"}, Raw: []byte{}}
	pb, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	res = doRaw(t, d, "POST", base, "application/vnd.kubernetes.protobuf", "application/json", append([]byte("k8s\x00"), pb...))
	wantStatusJSON("create with a Protobuf body", res, http.StatusBadRequest,
		`CronTab in version "v1" cannot be handled as a CronTab: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message`)

	res = doRaw(t, d, "PATCH", base+"/h", "application/strategic-merge-patch+json", "", []byte(`{"spec":{"image":"j"}}`))
	wantStatusJSON("strategic merge patch", res, http.StatusUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")

	res = doRaw(t, d, "POST", base, "application/json", "", []byte(`{"apiVersion":"stable.example.com/v2","kind":"CronTab","metadata":{"name":"v2"}}`))
	wantStatusJSON("wrong apiVersion", res, http.StatusBadRequest, "the API version in the data (stable.example.com/v2) does not match the expected API version (stable.example.com/v1)")

	// The deprecated version serves the same stored object, with a warning.
	res = doRaw(t, d, "GET", "/apis/stable.example.com/v1beta1/namespaces/cr-http/crontabs/h", "", "application/json", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET v1beta1: %d %s", res.Status, res.Body)
	}
	if w := res.Header.Get("Warning"); w != `299 - "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"` {
		t.Errorf("GET v1beta1: Warning %q", w)
	}
	var beta map[string]interface{}
	if err := json.Unmarshal(res.Body, &beta); err != nil {
		t.Fatal(err)
	}
	if beta["apiVersion"] != "stable.example.com/v1beta1" || beta["kind"] != "CronTab" {
		t.Errorf("GET v1beta1: apiVersion %v kind %v", beta["apiVersion"], beta["kind"])
	}

	res = doRaw(t, d, "GET", base, "", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", nil)
	var pom metav1.PartialObjectMetadataList
	if err := json.Unmarshal(res.Body, &pom); err != nil || res.Status != http.StatusOK || len(pom.Items) != 1 || pom.Items[0].Name != "h" {
		t.Errorf("PartialObjectMetadataList: %d %s", res.Status, res.Body)
	}

	res = doRaw(t, d, "GET", base+"/h", "", "application/json;as=Table;g=meta.k8s.io;v=v1", nil)
	var tbl metav1.Table
	if err := json.Unmarshal(res.Body, &tbl); err != nil || res.Status != http.StatusOK {
		t.Fatalf("Table: %d %s", res.Status, res.Body)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name+":"+c.Type)
	}
	if want := []string{"Name:string", "Spec:string", "Replicas:integer", "Age:date"}; !reflect.DeepEqual(cols, want) {
		t.Errorf("Table columns %v, want %v", cols, want)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != 4 || tbl.Rows[0].Cells[0] != "h" || tbl.Rows[0].Cells[1] != nil || tbl.Rows[0].Cells[2] != float64(1) {
		t.Errorf("Table row: %v, want [h <nil> 1 <age>]", tbl.Rows)
	}

	// The scale subresource: autoscaling/v1 Scale over the replica paths.
	res = doRaw(t, d, "PATCH", base+"/h/status", "application/merge-patch+json", "", []byte(`{"status":{"replicas":2,"labelSelector":"app=h"}}`))
	if res.Status != http.StatusOK {
		t.Fatalf("patch status: %d %s", res.Status, res.Body)
	}
	res = doRaw(t, d, "PATCH", base+"/h/scale", "application/merge-patch+json", "", []byte(`{"spec":{"replicas":3}}`))
	var scale struct {
		Kind, APIVersion string
		Spec             struct{ Replicas int32 }
		Status           struct {
			Replicas int32
			Selector string
		}
	}
	if err := json.Unmarshal(res.Body, &scale); err != nil || res.Status != http.StatusOK {
		t.Fatalf("patch scale: %d %s", res.Status, res.Body)
	}
	if scale.Kind != "Scale" || scale.APIVersion != "autoscaling/v1" || scale.Spec.Replicas != 3 || scale.Status.Replicas != 2 || scale.Status.Selector != "app=h" {
		t.Errorf("scale after patch: %+v, want Scale autoscaling/v1 spec 3 status 2 app=h", scale)
	}
	res = doRaw(t, d, "PUT", base+"/h/scale", "application/json", "", []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"h"},"spec":{"replicas":11}}`))
	wantRawStatus(t, "scale beyond the schema's maximum", res, http.StatusUnprocessableEntity,
		`CronTab.stable.example.com "h" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`)

	// kubectl scale goes through the scale subresource, and OpenAPI
	// publishes its paths with autoscaling/v1 Scale, as kube-apiserver's CRD
	// builder does.
	if out := d.Kubectl("scale", "-n", "cr-http", "crontab/h", "--replicas=4"); !strings.Contains(out.Stdout, "crontab.stable.example.com/h scaled") {
		t.Errorf("kubectl scale: %s %s", out.Stdout, out.Stderr)
	}
	res = doRaw(t, d, "GET", base+"/h/scale", "", "application/json", nil)
	if err := json.Unmarshal(res.Body, &scale); err != nil || scale.Spec.Replicas != 4 {
		t.Errorf("scale after kubectl scale: %d %s", res.Status, res.Body)
	}
	for _, doc := range []struct{ path, ref string }{
		{"/openapi/v3/apis/stable.example.com/v1", "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"},
		{"/openapi/v2", "#/definitions/io.k8s.api.autoscaling.v1.Scale"},
	} {
		res = doRaw(t, d, "GET", doc.path, "", "application/json", nil)
		var oa struct {
			Paths map[string]map[string]json.RawMessage
		}
		if err := json.Unmarshal(res.Body, &oa); err != nil || res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", doc.path, res.Status, err)
		}
		item := oa.Paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"]
		var get struct{ OperationID string }
		if err := json.Unmarshal(item["get"], &get); err != nil || get.OperationID != "readStableExampleComV1NamespacedCronTabScale" || !strings.Contains(string(item["put"]), doc.ref) {
			t.Errorf("%s: scale path item %s, want operationId readStableExampleComV1NamespacedCronTabScale and %s", doc.path, item["get"], doc.ref)
		}
	}

	// Discovery, as kube-apiserver's custom resource discovery lists it.
	res = doRaw(t, d, "GET", "/apis/stable.example.com/v1", "", "application/json", nil)
	var rl metav1.APIResourceList
	if err := json.Unmarshal(res.Body, &rl); err != nil {
		t.Fatalf("discovery: %d %s", res.Status, res.Body)
	}
	var entries []string
	for _, r := range rl.APIResources {
		entries = append(entries, r.Name+" "+r.Group+"/"+r.Version+"/"+r.Kind+" "+strings.Join(r.Verbs, ","))
	}
	wantEntries := []string{
		"crontabs //CronTab delete,deletecollection,get,list,patch,create,update,watch",
		"crontabs/status //CronTab get,patch,update",
		"crontabs/scale autoscaling/v1/Scale get,patch,update",
	}
	if !reflect.DeepEqual(entries, wantEntries) {
		t.Errorf("discovery of stable.example.com/v1:\n%q\nwant\n%q", entries, wantEntries)
	}

	// Cluster scope: Widgets have no namespace, and the default Age column.
	res = doRaw(t, d, "POST", "/apis/things.example.org/v1alpha1/widgets", "application/yaml", "",
		[]byte("apiVersion: things.example.org/v1alpha1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ignored\nspec:\n  size: 3\n"))
	if res.Status != http.StatusCreated {
		t.Fatalf("create widget: %d %s", res.Status, res.Body)
	}
	res = doRaw(t, d, "GET", "/apis/things.example.org/v1alpha1/namespaces/cr-http/widgets/w", "", "application/json", nil)
	if res.Status != http.StatusNotFound {
		t.Errorf("widget below a namespace: %d, want 404", res.Status)
	}
	wantTable(t, d.Kubectl("get", "widgets"), []string{"NAME", "AGE"}, []string{"w"})
}

// wantRawStatus checks a JSON Status answer's code and message.
func wantRawStatus(t *testing.T, what string, res httpResult, code int, msg string) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(res.Body, &st); err != nil {
		t.Errorf("%s: %d, body is no JSON Status: %q", what, res.Status, res.Body)
		return
	}
	if res.Status != code || int(st.Code) != code || st.Message != msg {
		t.Errorf("%s: %d %q, want %d %q", what, res.Status, st.Message, code, msg)
	}
}

// TestCustomResource_Lifecycle: finalizers, owner references and the
// garbage collector (a ConfigMap owned by a CronTab goes with it),
// namespace deletion, and a restart that keeps every custom resource.
func TestCustomResource_Lifecycle(t *testing.T) {
	dataDir := t.TempDir()
	d := startCRDaemon(t, DaemonOptions{DataDir: dataDir})
	ctx := context.Background()
	cs := d.Clientset()
	createNamespace(t, cs, "cr-life")
	dc := d.Dynamic()
	rc := dc.Resource(cronTabs).Namespace("cr-life")

	owner, err := rc.Create(ctx, cronTab("owner", map[string]interface{}{"image": "o"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "stable.example.com/v1", Kind: "CronTab", Name: "owner", UID: owner.GetUID()}
	mustCreateCM(t, cs, "cr-life", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{ref}}})

	held := cronTab("held", map[string]interface{}{"image": "h"})
	held.SetFinalizers([]string{"example.com/hold"})
	if _, err := rc.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Resource(widgets).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "things.example.org/v1alpha1", "kind": "Widget", "metadata": map[string]interface{}{"name": "kept"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := rc.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap owned by the deleted CronTab to be collected", func() bool {
		_, err := getCM(cs, "cr-life", "owned")
		return apierrors.IsNotFound(err)
	})

	if err := rc.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := rc.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || h.GetDeletionTimestamp() == nil {
		t.Fatalf("held after delete: %v %v, want it kept with deletionTimestamp", h, err)
	}

	// Restart: everything comes back.
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	d = startCRDaemon(t, DaemonOptions{DataDir: dataDir})
	dc = d.Dynamic()
	rc = dc.Resource(cronTabs).Namespace("cr-life")
	h, err = rc.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || h.GetDeletionTimestamp() == nil {
		t.Fatalf("held after restart: %v, want it kept with deletionTimestamp", err)
	}
	if _, err := dc.Resource(widgets).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("widget after restart: %v", err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := rc.Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove finalizer: %v", err)
	}
	if _, err := rc.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("held after its finalizer went: %v, want NotFound", err)
	}

	// Namespace deletion removes the namespace's custom resources.
	if _, err := rc.Create(ctx, cronTab("last", map[string]interface{}{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Clientset().CoreV1().Namespaces().Delete(ctx, "cr-life", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace cr-life and its CronTab to go", func() bool {
		_, err := d.Clientset().CoreV1().Namespaces().Get(ctx, "cr-life", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := rc.Get(ctx, "last", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CronTab after its namespace went: %v, want NotFound", err)
	}
}

// TestCustomResource_BadInput: malformed custom resources and patches get
// a 4xx Status, never a 5xx, and change nothing.
func TestCustomResource_BadInput(t *testing.T) {
	d := startCRDaemon(t)
	createNamespace(t, d.Clientset(), "cr-bad")
	base := "/apis/stable.example.com/v1/namespaces/cr-bad/crontabs"
	res := doRaw(t, d, "POST", base, "application/json", "", []byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"keep"},"spec":{"image":"k"}}`))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	before := rawGet(t, d, base+"/keep").Body

	creates := []string{
		``, `null`, `[]`, `"x"`, `{`, `{"kind":5}`, `{"kind":"CronTab"}`,
		`{"apiVersion":5,"kind":"CronTab","metadata":{"name":"a"}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":5}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","labels":{"x":1}}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":5}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"ports":[{"port":1}]}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},"spec":{"ports":5,"tags":[1,1]}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"Other","metadata":{"name":"a"}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"Bad Name"}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"keep"}}`,
	}
	for _, body := range creates {
		res := doRaw(t, d, "POST", base, "application/json", "", []byte(body))
		if res.Status < 400 || res.Status >= 500 || !strings.Contains(string(res.Body), `"kind":"Status"`) {
			t.Errorf("POST %s: %d %s, want a 4xx Status", body, res.Status, res.Body)
		}
	}
	patches := []struct{ typ, body string }{
		{"application/merge-patch+json", `{"kind":null}`},
		{"application/merge-patch+json", `{"apiVersion":"other.example.com/v1"}`},
		{"application/merge-patch+json", `{"metadata":{"name":"other"}}`},
		{"application/merge-patch+json", `{"spec":{"replicas":"many"}}`},
		{"application/merge-patch+json", `[`},
		{"application/json-patch+json", `[{"op":"remove","path":"/metadata"}]`},
		{"application/json-patch+json", `[{"op":"replace","path":"","value":5}]`},
		{"application/json-patch+json", `[{"op":"test","path":"/spec/image","value":"no"}]`},
		{"application/apply-patch+yaml", "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: keep}\nspec: {unknown: 1}\n"},
		{"application/apply-patch+yaml", "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: keep}\nspec: {ports: [{port: 1}]}\n"},
		{"application/strategic-merge-patch+json", `{}`},
		{"text/plain", `{}`},
	}
	for _, p := range patches {
		res := doRaw(t, d, "PATCH", base+"/keep?fieldManager=bad", p.typ, "", []byte(p.body))
		if res.Status < 400 || res.Status >= 500 || !strings.Contains(string(res.Body), `"kind":"Status"`) {
			t.Errorf("PATCH %s %s: %d %s, want a 4xx Status", p.typ, p.body, res.Status, res.Body)
		}
	}
	if after := rawGet(t, d, base+"/keep").Body; string(after) != string(before) {
		t.Errorf("the object changed:\nbefore %s\nafter  %s", before, after)
	}
	// Through the status subresource everything but status is ignored:
	// some of these change nothing and succeed, as in kube-apiserver
	// (which then also drops managedFields it cannot compute).
	for _, p := range patches {
		res := doRaw(t, d, "PATCH", base+"/keep/status?fieldManager=bad", p.typ, "", []byte(p.body))
		if res.Status >= 500 {
			t.Errorf("PATCH /status %s %s: %d %s", p.typ, p.body, res.Status, res.Body)
		}
	}
	res = rawGet(t, d, base)
	var list unstructured.UnstructuredList
	if err := list.UnmarshalJSON(res.Body); err != nil || len(list.Items) != 1 {
		t.Errorf("list after bad input: %v, %s; want only keep", err, res.Body)
	}
}

// TestCustomResource_DefaultsOnRead: objects stored before the schema had
// a default get it when read, as kube-apiserver's storage decoding applies
// defaults; fields the new schema drops are pruned on read.
func TestCustomResource_DefaultsOnRead(t *testing.T) {
	dir := t.TempDir()
	crd := func(extra string) string {
		path := filepath.Join(dir, fmt.Sprintf("crd-%d.yaml", len(extra)))
		doc := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.things.example.org}
spec:
  group: things.example.org
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
` + extra
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	before := crd("              size: {type: integer}\n              old: {type: string}\n")
	after := crd("              size: {type: integer}\n              color: {type: string, default: blue}\n")

	dataDir := t.TempDir()
	d := StartDaemon(t, DaemonOptions{DataDir: dataDir})
	applyCRDs(t, d, before, "gadgets.things.example.org")
	createNamespace(t, d.Clientset(), "cr-read")
	base := "/apis/things.example.org/v1/namespaces/cr-read/gadgets"
	res := doRaw(t, d, "POST", base, "application/json", "", []byte(`{"apiVersion":"things.example.org/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"size":1,"old":"x"}}`))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	d = StartDaemon(t, DaemonOptions{DataDir: dataDir})
	applyCRDs(t, d, after, "gadgets.things.example.org")
	// The CRD controller serves the new schema shortly after the update.
	deadline := time.Now().Add(30 * time.Second)
	for _, path := range []string{base + "/g", base} {
		for {
			res = rawGet(t, d, path)
			body := string(res.Body)
			if res.Status == http.StatusOK && strings.Contains(body, `"spec":{"color":"blue","size":1}`) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("GET %s after the schema changed: %d %s, want spec {color: blue (default), size: 1} without old", path, res.Status, body)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestCustomResource_DynamicInformer: client-go's dynamic informer lists,
// watches and keeps its cache in step with creates, status updates and
// deletes of a custom resource.
func TestCustomResource_DynamicInformer(t *testing.T) {
	d := startCRDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createNamespace(t, d.Clientset(), "cr-inf")
	rc := d.Dynamic().Resource(cronTabs).Namespace("cr-inf")
	if _, err := rc.Create(ctx, cronTab("before", map[string]interface{}{"image": "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(d.Dynamic(), 0, "cr-inf", nil)
	inf := f.ForResource(cronTabs)
	var mu sync.Mutex
	var events []string
	record := func(what string, obj interface{}) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		mu.Lock()
		events = append(events, what+" "+u.GetName()+" "+phase)
		mu.Unlock()
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { record("add", obj) },
		UpdateFunc: func(_, obj interface{}) { record("update", obj) },
		DeleteFunc: func(obj interface{}) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}

	created, err := rc.Create(ctx, cronTab("after", map[string]interface{}{"image": "a"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]interface{}{"phase": "Ready"}
	if _, err := rc.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add before ", "add after ", "update after Ready", "delete before "}
	waitFor(t, "the informer's events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= len(want)
	})
	mu.Lock()
	got := append([]string(nil), events...)
	mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("informer events %q, want %q", got, want)
	}
	objs, err := inf.Lister().ByNamespace("cr-inf").List(labels.Everything())
	if err != nil || len(objs) != 1 || objs[0].(*unstructured.Unstructured).GetName() != "after" {
		t.Errorf("lister: %v %v, want [after]", objs, err)
	}
}

// TestCustomResource_KubectlEditAndServerSideApply: kubectl edit through
// an editor, and kubectl apply --server-side by two managers: a conflict
// on the field the other owns, resolved with --force-conflicts.
func TestCustomResource_KubectlEditAndServerSideApply(t *testing.T) {
	d := startCRDaemon(t)
	createNamespace(t, d.Clientset(), "cr-ssa")
	alice := "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: daily\n  namespace: cr-ssa\nspec:\n  cronSpec: \"0 1 * * *\"\n  replicas: 2\n"
	wantOutput(t, d.KubectlStdin(alice, "apply", "--server-side", "--field-manager=alice", "-f", "-"), "crontab.stable.example.com/daily serverside-applied\n")
	bob := "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: daily\n  namespace: cr-ssa\nspec:\n  replicas: 4\n"
	res := d.KubectlStdin(bob, "apply", "--server-side", "--field-manager=bob", "-f", "-")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `conflict with "alice"`) || !strings.Contains(res.Stderr, ".spec.replicas") {
		t.Errorf("bob's apply of alice's field: want a conflict on .spec.replicas\n%s", res)
	}
	wantOutput(t, d.KubectlStdin(bob, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-"), "crontab.stable.example.com/daily serverside-applied\n")
	wantOutput(t, d.MustKubectl("-n", "cr-ssa", "get", "ct", "daily", "-o", "jsonpath={.spec.replicas} {.spec.cronSpec}"), "4 0 1 * * *")
	res = d.MustKubectl("-n", "cr-ssa", "get", "ct", "daily", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}:{.fieldsV1}{\"\\n\"}{end}")
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if strings.HasPrefix(line, "alice:") && strings.Contains(line, "f:replicas") {
			t.Errorf("alice still owns spec.replicas: %s", line)
		}
		if strings.HasPrefix(line, "bob:") && !strings.Contains(line, "f:replicas") {
			t.Errorf("bob does not own spec.replicas: %s", line)
		}
	}

	// kubectl edit with an editor that rewrites the schedule.
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/cronSpec: .*/cronSpec: 5 5 5 5 5/' \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	res = d.KubectlEnv([]string{"KUBE_EDITOR=" + editor}, "", "-n", "cr-ssa", "edit", "ct", "daily")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "crontab.stable.example.com/daily edited") {
		t.Fatalf("kubectl edit: %s", res)
	}
	wantOutput(t, d.MustKubectl("-n", "cr-ssa", "get", "ct", "daily", "-o", "jsonpath={.spec.cronSpec} {.spec.replicas}"), "5 5 5 5 5 4")
}
