package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRequestTimeout_Param: kube-apiserver's request deadline. A timeout
// query parameter that is not a duration gets 400 (in JSON and in
// Protobuf, as asked) and stores nothing; a request whose deadline has
// passed (?timeout=1ns) gets 504 Timeout, counted in
// apiserver_request_terminations_total; a timeout the request fits in,
// and a watch's (which is long-running), change nothing.
func TestRequestTimeout_Param(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const cms = "/api/v1/namespaces/default/configmaps"

	res := doRaw(t, d, "POST", cms+"?timeout=soon", "application/json", "application/json",
		[]byte(`{"metadata":{"name":"bad-timeout"}}`))
	st := decodeStatus(t, res, 400, metav1.StatusReasonBadRequest)
	if want := `invalid timeout specified in the request URL - time: invalid duration "soon"`; st.Message != want {
		t.Errorf("message %q, want %q", st.Message, want)
	}
	if res := rawGet(t, d, cms+"/bad-timeout"); res.Status != 404 {
		t.Errorf("GET bad-timeout after the refused create: %d, want 404", res.Status)
	}
	res = doRaw(t, d, "GET", cms+"?timeout=soon", "", "application/vnd.kubernetes.protobuf", nil)
	if res.Status != 400 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf") {
		t.Errorf("protobuf GET with a bad timeout: %d %q, want 400 in protobuf", res.Status, res.Header.Get("Content-Type"))
	}

	for _, tc := range []struct{ method, path, body string }{
		{"GET", cms + "?timeout=1ns", ""},
		{"POST", cms + "?timeout=1ns", `{"metadata":{"name":"late"}}`},
	} {
		ct := ""
		if tc.body != "" {
			ct = "application/json"
		}
		res := doRaw(t, d, tc.method, tc.path, ct, "application/json", []byte(tc.body))
		st := decodeStatus(t, res, 504, metav1.StatusReasonTimeout)
		if want := "Timeout: request did not complete within the allotted timeout"; st.Message != want {
			t.Errorf("%s %s: message %q, want %q", tc.method, tc.path, st.Message, want)
		}
	}

	// kube-apiserver counts its deadline's 504s as terminations.
	mfs := scrape(t, d)
	for verb, want := range map[string]float64{"LIST": 1, "POST": 1} {
		labels := map[string]string{"verb": verb, "resource": "configmaps", "code": "504"}
		if got := value(mfs["apiserver_request_terminations_total"], labels); got != want {
			t.Errorf("apiserver_request_terminations_total%v = %v, want %v", labels, got, want)
		}
	}

	res = doRaw(t, d, "POST", cms+"?timeout=30s", "application/json", "application/json", []byte(`{"metadata":{"name":"in-time"}}`))
	if res.Status != 201 {
		t.Fatalf("create with timeout=30s: %d %s", res.Status, res.Body)
	}
	if res := rawGet(t, d, cms+"?timeout=30s"); res.Status != 200 {
		t.Errorf("list with timeout=30s: %d %s", res.Status, res.Body)
	}
	// A watch ignores timeout (it is long-running): its first event comes.
	res = rawGet(t, d, cms+"?watch=1&timeoutSeconds=1&timeout=1ns")
	if res.Status != 200 || !strings.Contains(string(res.Body), `"name":"in-time"`) {
		t.Errorf("watch with timeout=1ns: %d %.300s, want 200 with the ADDED event", res.Status, res.Body)
	}
}
