package registry

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// goldenStep is one recorded kube-apiserver response from
// testdata/kube-apiserver-1.36.3-errors.json.
type goldenStep struct {
	Scenario string          `json:"scenario"`
	Step     string          `json:"step"`
	Status   int             `json:"status"`
	Body     json.RawMessage `json:"body"`
}

var (
	goldenOnce  sync.Once
	goldenSteps map[string]goldenStep
	goldenErr   error
)

// golden returns the recorded response of "scenario/step".
func golden(t *testing.T, key string) goldenStep {
	t.Helper()
	goldenOnce.Do(func() {
		b, err := os.ReadFile("testdata/kube-apiserver-1.36.3-errors.json")
		if err != nil {
			goldenErr = err
			return
		}
		var steps []goldenStep
		if goldenErr = json.Unmarshal(b, &steps); goldenErr != nil {
			return
		}
		goldenSteps = make(map[string]goldenStep, len(steps))
		for _, s := range steps {
			goldenSteps[s.Scenario+"/"+s.Step] = s
		}
	})
	if goldenErr != nil {
		t.Fatalf("load golden errors: %v", goldenErr)
	}
	s, ok := goldenSteps[key]
	if !ok {
		t.Fatalf("no golden step %q", key)
	}
	return s
}

// statusFields are the parts of a Status body that validation decides.
type statusFields struct {
	Status  string          `json:"status"`
	Message string          `json:"message"`
	Reason  string          `json:"reason"`
	Details json.RawMessage `json:"details"`
	Code    int             `json:"code"`
}

// assertInvalid checks that errs, turned into the 422 Status the HTTP layer
// sends (apierrors.NewInvalid), equals the golden body of key. replace maps
// apidiff placeholders in the golden body ("<uid:3>", "<gen:4>") to the
// values the test used.
func assertInvalid(t *testing.T, key string, gk schema.GroupKind, name string, errs field.ErrorList, replace map[string]string) {
	t.Helper()
	g := golden(t, key)
	want := string(g.Body)
	for from, to := range replace {
		want = strings.ReplaceAll(want, from, to)
	}
	var wantStatus statusFields
	if err := json.Unmarshal([]byte(want), &wantStatus); err != nil {
		t.Fatalf("decode golden %s: %v", key, err)
	}
	if len(errs) == 0 {
		t.Fatalf("%s: got no errors, want %q", key, wantStatus.Message)
	}
	gotJSON, err := json.Marshal(apierrors.NewInvalid(gk, name, errs).ErrStatus)
	if err != nil {
		t.Fatal(err)
	}
	var gotStatus statusFields
	if err := json.Unmarshal(gotJSON, &gotStatus); err != nil {
		t.Fatal(err)
	}
	if gotStatus.Message != wantStatus.Message {
		t.Errorf("%s message:\n got  %s\n want %s", key, gotStatus.Message, wantStatus.Message)
	}
	if !jsonEqual(t, gotStatus.Details, wantStatus.Details) {
		t.Errorf("%s details:\n got  %s\n want %s", key, gotStatus.Details, wantStatus.Details)
	}
	if gotStatus.Code != wantStatus.Code || gotStatus.Reason != wantStatus.Reason || gotStatus.Status != wantStatus.Status {
		t.Errorf("%s: got %d %s %s, want %d %s %s", key, gotStatus.Code, gotStatus.Reason, gotStatus.Status, wantStatus.Code, wantStatus.Reason, wantStatus.Status)
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y interface{}
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// updateErrs is what the HTTP layer reports for an update, as
// kube-apiserver's rest.BeforeUpdate does: the generic checks first, then
// the strategy's errs.
func updateErrs(obj, old runtime.Object, namespaced bool, errs field.ErrorList) field.ErrorList {
	return append(ValidateGenericUpdate(obj, old, namespaced), errs...)
}

// assertNoErrors fails when errs is not empty.
func assertNoErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("got errors %v, want none", errs.ToAggregate())
	}
}

func jsonUnmarshal(b []byte, v interface{}) error { return json.Unmarshal(b, v) }

// parseGVR parses "group/version/resource" ("/v1/configmaps" for core) and
// fails the test when no kind is registered there.
func parseGVR(t *testing.T, s string) schema.GroupVersionResource {
	t.Helper()
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		t.Fatalf("bad gvr %q", s)
	}
	gvr := schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
	if Builtin().Lookup(gvr) == nil {
		t.Fatalf("no kind at %v", gvr)
	}
	return gvr
}
