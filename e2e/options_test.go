package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOptions_TypeChecked sends option bodies and parameters of the wrong
// kind, apiVersion or type, and kind-specific preconditions that do not
// hold, and checks that each is refused with kube-apiserver's message and
// that nothing stored changed: a DELETE whose body is not a DeleteOptions
// must not delete.
func TestOptions_TypeChecked(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "options"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"keep", "other"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data:       map[string]string{"k": name},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	coll := "/api/v1/namespaces/" + ns + "/configmaps"
	item := coll + "/keep"
	stored := func() map[string][]byte {
		out := map[string][]byte{}
		for _, name := range []string{"keep", "other"} {
			got := doRaw(t, d, "GET", coll+"/"+name, "", "application/json", nil)
			out[name] = got.Body
			if got.Status != 200 {
				t.Errorf("GET %s: %d %s", name, got.Status, got.Body)
			}
		}
		return out
	}
	before := stored()
	keep, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name                string
		method, path        string
		contentType, body   string
		wantCode            int
		wantReason          metav1.StatusReason
		wantMessageContains string
	}{
		{name: "delete with a ConfigMap body", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"}}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: `no kind "ConfigMap" is registered for version "v1"`},
		{name: "delete with a Pod body", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"kind":"Pod","apiVersion":"v1"}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: `no kind "Pod" is registered`},
		{name: "delete with a YAML ConfigMap body", method: "DELETE", path: item, contentType: "application/yaml",
			body:     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: `no kind "ConfigMap" is registered`},
		{name: "delete with gracePeriodSeconds a string", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":"x"}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "gracePeriodSeconds"},
		{name: "delete with propagationPolicy a number", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"propagationPolicy":5}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "propagationPolicy"},
		{name: "delete with preconditions a list", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"preconditions":[]}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "preconditions"},
		{name: "delete with a body of unknown content type", method: "DELETE", path: item, contentType: "text/plain",
			body:     `{}`,
			wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "delete with a non-numeric gracePeriodSeconds parameter", method: "DELETE", path: item + "?gracePeriodSeconds=abc",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: `parsing "abc": invalid syntax`},
		{name: "delete with a stale uid precondition", method: "DELETE", path: item, contentType: "application/json",
			body:     `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`,
			wantCode: 409, wantReason: metav1.StatusReasonConflict, wantMessageContains: "does not match the UID in record"},
		{name: "deletecollection with a ConfigMap body", method: "DELETE", path: coll, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"}}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "decoded object cannot be converted to DeleteOptions"},
		{name: "deletecollection with a Pod body", method: "DELETE", path: coll, contentType: "application/json",
			body:     `{"kind":"Pod","apiVersion":"v1"}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "decoded object cannot be converted to DeleteOptions"},
		{name: "deletecollection with a bad limit", method: "DELETE", path: coll + "?limit=abc",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "update with another uid", method: "PUT", path: item, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","uid":"00000000-0000-0000-0000-000000000000"},"data":{"k":"changed"}}`,
			wantCode: 409, wantReason: metav1.StatusReasonConflict,
			wantMessageContains: `Operation cannot be fulfilled on configmaps "keep": StorageError: invalid object, Code: 4, Key: /registry/configmaps/options/keep, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: ` + string(keep.UID)},
		{name: "update with another name", method: "PUT", path: item, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"},"data":{"k":"changed"}}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "the name of the object (other) does not match the name on the URL (keep)"},
		{name: "update with another namespace", method: "PUT", path: item, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","namespace":"default"},"data":{"k":"changed"}}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMessageContains: "the namespace of the provided object does not match the namespace sent on the request"},
		{name: "update with a Secret body", method: "PUT", path: item, contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"keep"}}`,
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "create with a non-boolean dryRun list", method: "POST", path: coll + "?dryRun=Maybe", contentType: "application/json",
			body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`,
			wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "list with a negative limit is a full list", method: "GET", path: coll + "?limit=-1",
			wantCode: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := doRaw(t, d, tt.method, tt.path, tt.contentType, "application/json", []byte(tt.body))
			if tt.wantCode == 200 {
				if got.Status != 200 {
					t.Errorf("%s %s: got %d %s, want 200", tt.method, tt.path, got.Status, got.Body)
				}
				return
			}
			st := got.status(t)
			if got.Status != tt.wantCode || st.Reason != tt.wantReason || int(st.Code) != tt.wantCode {
				t.Errorf("%s %s: got %d %q (code %d, message %q), want %d %q", tt.method, tt.path, got.Status, st.Reason, st.Code, st.Message, tt.wantCode, tt.wantReason)
			}
			if !strings.Contains(st.Message, tt.wantMessageContains) {
				t.Errorf("%s %s: message %q, want it to contain %q", tt.method, tt.path, st.Message, tt.wantMessageContains)
			}
		})
	}

	after := stored()
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("ConfigMap %s changed:\nbefore %s\nafter  %s", name, b, after[name])
		}
	}

	// The same DeleteOptions, well formed and in any apiVersion, deletes.
	for _, body := range []string{
		`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`,
	} {
		got := doRaw(t, d, "DELETE", coll+"/other", "application/json", "application/json", []byte(body))
		if got.Status != 200 {
			t.Errorf("DELETE with %s: got %d %s, want 200", body, got.Status, got.Body)
		}
	}
	if got := doRaw(t, d, "GET", coll+"/other", "", "application/json", nil); got.Status != 404 {
		t.Errorf("GET other after its delete: got %d, want 404", got.Status)
	}
}
