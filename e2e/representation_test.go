package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// TestRepresentation_ErrorStatus checks that an error Status comes back in
// the representation the client asked for: YAML for YAML, Protobuf for
// Protobuf, JSON when the Accept header offers nothing that can carry a
// Status, as kube-apiserver's ErrorNegotiated does; and that a watch asked
// for in YAML, which cannot stream, is kube-apiserver's 406.
func TestRepresentation_ErrorStatus(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	missing := "/api/v1/namespaces/default/configmaps/missing"
	wantMessage := `configmaps "missing" not found`
	tests := []struct {
		accept, wantContentType string
	}{
		{accept: "application/yaml", wantContentType: "application/yaml"},
		{accept: "application/vnd.kubernetes.protobuf", wantContentType: "application/vnd.kubernetes.protobuf"},
		{accept: "application/vnd.kubernetes.protobuf, application/json", wantContentType: "application/vnd.kubernetes.protobuf"},
		{accept: "application/json;as=Table;v=v1;g=meta.k8s.io, application/yaml", wantContentType: "application/yaml"},
		{accept: "application/json", wantContentType: "application/json"},
		{accept: "", wantContentType: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			got := doRaw(t, d, "GET", missing, "", tt.accept, nil)
			if got.Status != 404 {
				t.Fatalf("got %d %s, want 404", got.Status, got.Body)
			}
			if ct := got.Header.Get("Content-Type"); ct != tt.wantContentType {
				t.Fatalf("Content-Type %q, want %q", ct, tt.wantContentType)
			}
			var st metav1.Status
			switch tt.wantContentType {
			case "application/yaml":
				if err := yaml.UnmarshalStrict(got.Body, &st); err != nil {
					t.Fatalf("body %s: %v", got.Body, err)
				}
			case "application/vnd.kubernetes.protobuf":
				obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(got.Body, nil, nil)
				if err != nil {
					t.Fatalf("decode Protobuf body: %v", err)
				}
				p, ok := obj.(*metav1.Status)
				if !ok {
					t.Fatalf("decoded a %T, want a *metav1.Status", obj)
				}
				st = *p
			default:
				st = got.status(t)
			}
			if st.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != wantMessage {
				t.Errorf("got %d %s %q, want 404 NotFound %q", st.Code, st.Reason, st.Message, wantMessage)
			}
		})
	}

	// client-go's typed clients ask for Protobuf: the error they get is the
	// server's Status, not a generic one made from a JSON they can't read.
	cfg := d.RESTConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Get(context.Background(), "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != wantMessage {
		t.Errorf("Protobuf client get: %v, want NotFound %q", err, wantMessage)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `ConfigMap "Bad_Name" is invalid`) {
		t.Errorf("Protobuf client create: %v, want Invalid", err)
	}

	// Nothing acceptable at all: the 406 itself is JSON.
	got := doRaw(t, d, "GET", missing, "", "text/html", nil)
	if st := got.status(t); got.Status != 406 || st.Reason != metav1.StatusReasonNotAcceptable || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Accept text/html: got %d %s (%s), want a JSON 406", got.Status, st.Reason, got.Header.Get("Content-Type"))
	}

	// A watch cannot stream YAML; the 406 comes back in YAML all the same.
	got = doRaw(t, d, "GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", "", "application/yaml", nil)
	var st metav1.Status
	if err := yaml.UnmarshalStrict(got.Body, &st); err != nil {
		t.Fatalf("watch as YAML: body %s: %v", got.Body, err)
	}
	if got.Status != 406 || st.Reason != metav1.StatusReasonNotAcceptable ||
		st.Message != "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" {
		t.Errorf("watch as YAML: got %d %s %q, want kube-apiserver's 406", got.Status, st.Reason, st.Message)
	}
}
