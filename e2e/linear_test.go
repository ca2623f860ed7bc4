package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLinear_HugeMetadataLists sends objects and patches that carry lists of
// hundreds of thousands of entries (the 1.5 MB ConfigMap with 300,000
// finalizers took no answer in 170 s and 367 MB of RSS) and checks that each
// gets its answer, that a refusal is a bounded 422, and that the daemon's
// peak RSS stays under a fixed ceiling. The requests' own deadline
// (requestTimeout) is the hang guard.
func TestLinear_HugeMetadataLists(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	coll := "/api/v1/namespaces/default/configmaps"
	body := func(name string, meta map[string]any) []byte {
		meta["name"] = name
		b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	repeat := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	numbered := func(format string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return out
	}
	badLabels := map[string]string{}
	for i := 0; i < 60000; i++ {
		badLabels[fmt.Sprintf("k%d!", i)] = "v"
	}
	if got := doRaw(t, d, "POST", coll, "application/json", "", body("target", map[string]any{})); got.Status != 201 {
		t.Fatalf("create target: %d %s", got.Status, got.Body)
	}
	finalizerPatch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": repeat("a", 300000)}})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name              string
		method, path, ct  string
		body              []byte
		wantCode          int
		wantMessagePrefix string
	}{
		{name: "300,000 invalid finalizers", method: "POST", path: coll, ct: "application/json",
			body: body("fin", map[string]any{"finalizers": repeat("a", 300000)}), wantCode: 422,
			wantMessagePrefix: `ConfigMap "fin" is invalid: [metadata.finalizers[0]: Invalid value: "a": name is neither a standard finalizer name nor is it fully qualified, metadata.finalizers[1]: `},
		{name: "50,000 distinct invalid finalizers", method: "POST", path: coll, ct: "application/json",
			body: body("fin2", map[string]any{"finalizers": numbered("f%d", 50000)}), wantCode: 422,
			wantMessagePrefix: `ConfigMap "fin2" is invalid: [metadata.finalizers[0]: Invalid value: "f0": `},
		{name: "60,000 invalid labels", method: "POST", path: coll, ct: "application/json",
			body: body("labels", map[string]any{"labels": badLabels}), wantCode: 422,
			wantMessagePrefix: `ConfigMap "labels" is invalid: [metadata.labels: Invalid value: `},
		{name: "json-patch adding 300,000 invalid finalizers", method: "PATCH", path: coll + "/target", ct: "application/json-patch+json",
			body: finalizerPatch, wantCode: 422,
			wantMessagePrefix: `ConfigMap "target" is invalid: [metadata.finalizers[0]: Invalid value: "a": `},
		{name: "60,000 valid finalizers", method: "POST", path: coll, ct: "application/json",
			body: body("fin3", map[string]any{"finalizers": numbered("example.com/f%d", 60000)}), wantCode: 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := doRaw(t, d, tt.method, tt.path, tt.ct, "application/json", tt.body)
			if got.Status != tt.wantCode {
				t.Fatalf("got %d %.300s, want %d", got.Status, got.Body, tt.wantCode)
			}
			if tt.wantCode != 422 {
				return
			}
			st := got.status(t)
			if st.Reason != metav1.StatusReasonInvalid || !strings.HasPrefix(st.Message, tt.wantMessagePrefix) {
				t.Errorf("got %s %.300q, want Invalid %q...", st.Reason, st.Message, tt.wantMessagePrefix)
			}
			// The refusal is bounded: the first causes and a count of the rest.
			if got, max := len(st.Details.Causes), 101; got > max {
				t.Errorf("causes: got %d, want at most %d", got, max)
			}
			if got, max := len(got.Body), 64<<10; got > max {
				t.Errorf("response: got %d bytes, want at most %d", got, max)
			}
			if last := st.Details.Causes[len(st.Details.Causes)-1].Message; !strings.HasSuffix(last, "more errors") {
				t.Errorf("last cause %q, want a count of the errors not listed", last)
			}
		})
	}
	// The target is unchanged by the refused patch.
	if got := doRaw(t, d, "GET", coll+"/target", "", "application/json", nil); got.Status != 200 || strings.Contains(string(got.Body), "finalizers") {
		t.Errorf("target after the refused patch: %d %.300s", got.Status, got.Body)
	}
	if got, ceiling := d.PeakRSS(t), int64(320<<20); got > ceiling {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", got>>20, ceiling>>20)
	} else {
		t.Logf("peak RSS %d MiB", got>>20)
	}
}
