package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// doRaw sends one request and returns its status, headers and body.
func doRaw(t *testing.T, d *Daemon, method, path, contentType, accept string, body []byte) httpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// TestBadInput_Status sends malformed and out-of-range input and checks that
// each gets a metav1.Status with kube-apiserver's code and reason, never a
// 500, and that nothing already stored changes.
func TestBadInput_Status(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	ns := "bad-input"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keep, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "keep", Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coll := "/api/v1/namespaces/" + ns + "/configmaps"
	item := coll + "/keep"
	big := append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"`), bytes.Repeat([]byte("x"), 3<<20+1)...)
	big = append(big, `"}}`...)

	tests := []struct {
		name                string
		method, path        string
		contentType, accept string
		body                string
		rawBody             []byte
		wantCode            int
		wantReason          metav1.StatusReason
	}{
		{name: "oversized body", method: "POST", path: coll, contentType: "application/json", rawBody: big, wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "malformed JSON", method: "POST", path: coll, contentType: "application/json", body: `{"apiVersion": "v1", "kind": "`, wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed YAML", method: "POST", path: coll, contentType: "application/yaml", body: "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed protobuf", method: "POST", path: coll, contentType: "application/vnd.kubernetes.protobuf", body: "k8s\x00\xff\xff\xff", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "not a protobuf envelope", method: "POST", path: coll, contentType: "application/vnd.kubernetes.protobuf", body: "garbage", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unsupported content type", method: "POST", path: coll, contentType: "text/plain", body: "hello", wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "unacceptable accept", method: "GET", path: item, accept: "application/xml", wantCode: 406, wantReason: metav1.StatusReasonNotAcceptable},
		{name: "invalid name", method: "POST", path: coll, contentType: "application/json", body: `{"metadata":{"name":"Not_Valid"}}`, wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "invalid label in body", method: "PUT", path: item, contentType: "application/json", body: `{"metadata":{"name":"keep","labels":{"bad key!":"x"}}}`, wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "bad label selector", method: "GET", path: coll + "?labelSelector=a%3D%3D%3Db", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "bad field selector", method: "GET", path: coll + "?fieldSelector=metadata.name", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unsupported field selector", method: "GET", path: coll + "?fieldSelector=data.k%3Dv", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "limit not a number", method: "GET", path: coll + "?limit=abc", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "timeoutSeconds not a number", method: "GET", path: coll + "?watch=1&timeoutSeconds=abc", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "resourceVersion not a number", method: "GET", path: coll + "?resourceVersion=abc", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unknown resourceVersionMatch", method: "GET", path: coll + "?resourceVersion=1&resourceVersionMatch=Sometimes", wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "unknown fieldValidation", method: "POST", path: coll + "?fieldValidation=Loose", contentType: "application/json", body: `{"metadata":{"name":"fv"}}`, wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "unknown dryRun", method: "POST", path: coll + "?dryRun=Maybe", contentType: "application/json", body: `{"metadata":{"name":"dr"}}`, wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "unknown propagationPolicy", method: "DELETE", path: item + "?propagationPolicy=Sometimes", wantCode: 422, wantReason: metav1.StatusReasonInvalid},
		{name: "malformed DeleteOptions", method: "DELETE", path: item, contentType: "application/json", body: `{"kind":"DeleteOptions",`, wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed merge patch", method: "PATCH", path: item, contentType: "application/merge-patch+json", body: `{"data":`, wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed JSON patch", method: "PATCH", path: item, contentType: "application/json-patch+json", body: `[{"op":`, wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "malformed apply body", method: "PATCH", path: item + "?fieldManager=m", contentType: "application/apply-patch+yaml", body: "a: [\n", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
		{name: "unknown patch type", method: "PATCH", path: item, contentType: "application/x-patch", body: `{}`, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType},
		{name: "POST to an item", method: "POST", path: item, contentType: "application/json", body: `{}`, wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed},
		{name: "stale resourceVersion", method: "PUT", path: item, contentType: "application/json", body: `{"metadata":{"name":"keep","resourceVersion":"1"}}`, wantCode: 409, wantReason: metav1.StatusReasonConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.rawBody
			if body == nil {
				body = []byte(tt.body)
			}
			got := doRaw(t, d, tt.method, tt.path, tt.contentType, tt.accept, body)
			st := got.status(t)
			if got.Status != tt.wantCode || st.Reason != tt.wantReason || st.Kind != "Status" {
				t.Errorf("%s %s: got %d %q (kind %q, message %q), want %d %q", tt.method, tt.path, got.Status, st.Reason, st.Kind, st.Message, tt.wantCode, tt.wantReason)
			}
			if int(st.Code) != tt.wantCode {
				t.Errorf("Status.code = %d, want %d", st.Code, tt.wantCode)
			}
		})
	}

	// Random garbage at every write endpoint: always a 4xx Status.
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
		"application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"}
	for i := 0; i < 200; i++ {
		garbage := make([]byte, rng.IntN(64))
		for j := range garbage {
			garbage[j] = byte(rng.IntN(256))
		}
		if i%3 == 0 {
			garbage = []byte(`{"metadata":` + strings.Repeat("[", rng.IntN(40)))
		}
		ct := types[rng.IntN(len(types))]
		method, path := "POST", coll
		if strings.Contains(ct, "patch") {
			method, path = "PATCH", item+"?fieldManager=fuzz"
		} else if i%2 == 0 {
			method, path = "PUT", item
		}
		got := doRaw(t, d, method, path, ct, "", garbage)
		if got.Status < 400 || got.Status >= 500 {
			// A patch of random bytes can be valid JSON that changes nothing.
			if !(got.Status == 200 && method == "PATCH") {
				t.Errorf("%s %s (%s) with %q: got %d %s, want a 4xx Status", method, path, ct, garbage, got.Status, got.Body)
			}
		}
	}

	// Nothing stored changed.
	after, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != keep.ResourceVersion || after.Data["k"] != "v" || after.Labels["a"] != "b" {
		t.Errorf("stored object changed: got rv %s data %v labels %v, want rv %s data %v labels %v",
			after.ResourceVersion, after.Data, after.Labels, keep.ResourceVersion, keep.Data, keep.Labels)
	}
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(list.Items), 1; got != want {
		names := make([]string, 0, len(list.Items))
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		t.Errorf("ConfigMaps after bad input: got %d (%v), want %d", got, names, want)
	}
}

// TestEvent_TTL checks that Events expire --event-ttl after their last
// write, as kube-apiserver's --event-ttl does (an etcd lease renewed on
// every write): an Event updated every half second outlives two TTLs, and
// expires once the updates stop.
func TestEvent_TTL(t *testing.T) {
	t.Parallel()
	const ttl = 4 * time.Second
	d := startDaemonArgs(t, "--event-ttl", ttl.String())
	cs := d.Clientset()
	ctx := context.Background()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "short-lived", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "x"},
		Reason:         "Test",
		Message:        "expires",
		Type:           corev1.EventTypeNormal,
	}
	if _, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Events("default").Get(ctx, "short-lived", metav1.GetOptions{}); err != nil {
		t.Fatalf("event right after create: %v", err)
	}
	// Each update renews the TTL: the Event is still there after 2×TTL.
	renewUntil := time.Now().Add(2 * ttl)
	for i := int32(2); time.Now().Before(renewUntil); i++ {
		cur, err := cs.CoreV1().Events("default").Get(ctx, "short-lived", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("event while it is being updated (update %d): %v", i, err)
		}
		cur.Count = i
		cur.Message = fmt.Sprintf("renewed %d", i)
		if _, err := cs.CoreV1().Events("default").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		time.Sleep(ttl / 8)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := cs.CoreV1().Events("default").Get(ctx, "short-lived", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("event still present a minute after its last write, with a %v TTL", ttl)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Other kinds are not expired.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
