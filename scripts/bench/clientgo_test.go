package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

func TestParseFlags_Client(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.client != clientPlain || cfg.idleWatchConns != 1 {
		t.Errorf("defaults: client %q, idle-watch-conns %d; want %q, 1", cfg.client, cfg.idleWatchConns, clientPlain)
	}
	cfg, err = parseFlags([]string{"--client", "clientgo", "--idle-watch-conns", "10"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.client != clientGo || cfg.idleWatchConns != 10 {
		t.Errorf("got client %q, idle-watch-conns %d; want %q, 10", cfg.client, cfg.idleWatchConns, clientGo)
	}
	for _, bad := range [][]string{{"--client", "kubectl"}, {"--client", ""}, {"--idle-watch-conns", "0"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", bad)
		}
	}
}

// protoCodec decodes what a typed client would: ConfigMaps and their
// lists in the Protobuf envelope.
func protoCodec(t *testing.T) *protobuf.Serializer {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return protobuf.NewSerializer(scheme, scheme)
}

func decodeConfigMap(t *testing.T, b []byte) *corev1.ConfigMap {
	t.Helper()
	obj, gvk, err := protoCodec(t).Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("decode %q: %v", b[:min(len(b), 40)], err)
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || gvk.Kind != "ConfigMap" || gvk.Version != "v1" {
		t.Fatalf("decoded %T (%v), want a v1 ConfigMap", obj, gvk)
	}
	return cm
}

func TestProtoConfigMapBody_AppendCreate(t *testing.T) {
	enc := newProtoConfigMapBody("ns1", 100)
	cm := decodeConfigMap(t, enc.appendCreate([]byte("junk")[:0], "c-", 42, 1234567890))
	if cm.Namespace != "ns1" || cm.Name != "c-42" {
		t.Errorf("namespace/name = %s/%s, want ns1/c-42", cm.Namespace, cm.Name)
	}
	if got := cm.Annotations[sentAnnotation]; got != "1234567890" {
		t.Errorf("sent annotation = %q, want 1234567890", got)
	}
	if got := cm.Data["payload"]; len(got) != 100 || !strings.HasPrefix(got, "abc") {
		t.Errorf("payload = %q, want 100 bytes abc…", got)
	}
	if cm := decodeConfigMap(t, enc.appendCreate(nil, "c-", 1, 0)); cm.Annotations != nil {
		t.Errorf("annotations without a send time = %v, want none", cm.Annotations)
	}
}

func TestProtoConfigMapBody_AppendUpdate(t *testing.T) {
	enc := newProtoConfigMapBody("ns1", 10)
	cm := decodeConfigMap(t, enc.appendUpdate(nil, "rmw-3", []byte("777"), 9))
	if cm.Name != "rmw-3" || cm.ResourceVersion != "777" || cm.Data["counter"] != "9" || len(cm.Data["payload"]) != 10 {
		t.Errorf("got name %q rv %q data %v", cm.Name, cm.ResourceVersion, cm.Data)
	}
}

// encodeProto encodes obj as the daemon would send it to a typed client.
func encodeProto(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protoCodec(t).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWire_ResourceVersion(t *testing.T) {
	wi := &wire{}
	obj := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "12345", UID: "u"},
		Data:       map[string]string{"resourceVersion": "not this"},
	}
	list := &corev1.ConfigMapList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "tok"},
		Items:    []corev1.ConfigMap{*obj},
	}
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"protobuf object", encodeProto(t, obj), "12345"},
		{"protobuf list", encodeProto(t, list), "99"},
		{"protobuf object without one", encodeProto(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}), ""},
		{"json object", []byte(`{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"8"}}`), "8"},
		{"neither", []byte("k8s"), ""},
	} {
		if got := string(wi.resourceVersion(tc.body)); got != tc.want {
			t.Errorf("%s: resourceVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDecodeList(t *testing.T) {
	items := make([]corev1.ConfigMap, 3)
	for i := range items {
		items[i] = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "5"}}
	}
	list := &corev1.ConfigMapList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "eyJ2IjoxfQ"},
		Items:    items,
	}
	for _, tc := range []struct {
		name string
		body []byte
		want listInfo
	}{
		{"protobuf", encodeProto(t, list), listInfo{items: 3, cont: "eyJ2IjoxfQ", rv: "99", encoding: "Protobuf"}},
		{"protobuf last page", encodeProto(t, &corev1.ConfigMapList{TypeMeta: list.TypeMeta, ListMeta: metav1.ListMeta{ResourceVersion: "7"}}), listInfo{rv: "7", encoding: "Protobuf"}},
		{"json", []byte(`{"metadata":{"resourceVersion":"9","continue":"c"},"items":[{},{}]}`), listInfo{items: 2, cont: "c", rv: "9", encoding: "JSON"}},
	} {
		got, err := decodeList(tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: decodeList = %+v, want %+v", tc.name, got, tc.want)
		}
		if cont := continueOfAny(tc.body); cont != tc.want.cont {
			t.Errorf("%s: continueOfAny = %q, want %q", tc.name, cont, tc.want.cont)
		}
	}
	if _, err := decodeList([]byte("k8s\x00\xff")); err == nil {
		t.Error("decodeList of a broken envelope succeeded, want an error")
	}
}

// watchFrame is one event of a Protobuf watch stream as kube-apiserver
// writes it: length, then a WatchEvent whose object is enveloped.
func watchFrame(t *testing.T, typ string, obj runtime.Object) []byte {
	t.Helper()
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: encodeProto(t, obj)}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func sentConfigMap(name, sent string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "n", ResourceVersion: "3", Annotations: map[string]string{sentAnnotation: sent}},
		Data:       map[string]string{"payload": strings.Repeat("x", 300)},
	}
}

func TestParseSentProto(t *testing.T) {
	frame := watchFrame(t, "ADDED", sentConfigMap("a", "1700000000123456789"))[4:]
	if got := parseSentProto(frame); got != 1700000000123456789 {
		t.Errorf("parseSentProto = %d, want 1700000000123456789", got)
	}
	other := watchFrame(t, "ADDED", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})[4:]
	if got := parseSentProto(other); got != 0 {
		t.Errorf("parseSentProto without the annotation = %d, want 0", got)
	}
	if got := parseSentProto(watchFrame(t, "ADDED", sentConfigMap("a", "12x"))[4:]); got != 0 {
		t.Errorf("parseSentProto of a non-number = %d, want 0", got)
	}
}

func TestWatcher_RunProto(t *testing.T) {
	var stream []byte
	stream = append(stream, watchFrame(t, "ADDED", sentConfigMap("a", "1"))...)
	stream = append(stream, watchFrame(t, "BOOKMARK", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})...)
	stream = append(stream, watchFrame(t, "MODIFIED", sentConfigMap("b", "2"))...)
	ev := metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: []byte("k8s\x00status")}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	stream = append(stream, append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)...)

	// A small buffer: frames span reads.
	w := &watcher{hist: newHistogram(), proto: true, bufSize: 64}
	w.run(bytes.NewReader(stream))
	if w.events.Load() != 2 || w.other.Load() != 1 || w.errors.Load() != 1 || !w.closed.Load() {
		t.Errorf("events %d other %d errors %d closed %v; want 2, 1, 1, true", w.events.Load(), w.other.Load(), w.errors.Load(), w.closed.Load())
	}
	if !strings.Contains(w.errorMsg, "ERROR") {
		t.Errorf("errorMsg = %q, want the ERROR event", w.errorMsg)
	}

	t.Run("truncated frame", func(t *testing.T) {
		w := &watcher{hist: newHistogram(), proto: true}
		full := watchFrame(t, "ADDED", sentConfigMap("a", "1"))
		w.run(bytes.NewReader(full[:len(full)-5]))
		if w.events.Load() != 0 || w.errorMsg == "" {
			t.Errorf("events %d, errorMsg %q; want 0 and an error", w.events.Load(), w.errorMsg)
		}
	})
}

func TestWireRatios(t *testing.T) {
	plain := []Result{
		{Workload: "get-16", OpsPerSec: 20000, ServerCPU: 1, Latency: &Latency{P99MS: 2}},
		{Workload: "rss-peak-get", Value: 50, Unit: "MiB"},
		{Workload: "only-plain", OpsPerSec: 5, Latency: &Latency{}},
	}
	cg := []Result{
		{Workload: "get-16 clientgo", OpsPerSec: 15000, ServerCPU: 1.5, Latency: &Latency{P99MS: 3}, Target: "≥40,000/s"},
		{Workload: "rss-peak-get clientgo", Value: 60, Unit: "MiB"},
	}
	got := wireRatios(plain, cg, " clientgo")
	if len(got) != 2 {
		t.Fatalf("got %d ratios, want 2: %+v", len(got), got)
	}
	if got[0].Workload != "get-16 clientgo/plain" || got[0].Value != 75 || got[0].Unit != "%" || got[0].Target != "≥40,000/s" {
		t.Errorf("rate ratio = %+v, want get-16 clientgo/plain 75%% with the target", got[0])
	}
	if notes := strings.Join(got[0].Notes, "; "); !strings.Contains(notes, "daemon CPU per op 100 µs against 50 µs") {
		t.Errorf("rate ratio notes %q lack the daemon CPU per op", notes)
	}
	if got[1].Workload != "rss-peak-get clientgo/plain" || got[1].Value != 120 {
		t.Errorf("value ratio = %+v, want rss-peak-get clientgo/plain 120%%", got[1])
	}
}

// protoFake puts next (the JSON fake API) behind what a typed client's
// requests need: Protobuf request bodies are decoded to JSON for it, and
// its JSON answers (objects, lists, watch event lines) are encoded in
// Protobuf when the request's Accept asks for Protobuf first. It counts
// the requests and responses it translated.
type protoFake struct {
	t               *testing.T
	next            http.Handler
	bodies, answers atomic.Int64
	watchFrames     atomic.Int64
}

func (p *protoFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	codec := protoCodec(p.t)
	if r.Header.Get("Content-Type") == mediaProtobuf {
		body, _ := io.ReadAll(r.Body)
		obj, _, err := codec.Decode(body, nil, nil)
		if err != nil {
			http.Error(w, "decode protobuf body: "+err.Error(), http.StatusUnsupportedMediaType)
			return
		}
		cm := obj.(*corev1.ConfigMap)
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		js, _ := json.Marshal(cm)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(js)), int64(len(js))
		r.Header.Set("Content-Type", "application/json")
		p.bodies.Add(1)
	}
	if !strings.HasPrefix(r.Header.Get("Accept"), mediaProtobuf) {
		p.next.ServeHTTP(w, r)
		return
	}
	r.Header.Set("Accept", "application/json")
	if q := r.URL.Query(); q.Get("watch") != "" {
		w.Header().Set("Content-Type", mediaProtobuf+";stream=watch")
		p.next.ServeHTTP(&protoWatchWriter{p: p, w: w}, r)
		return
	}
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	if rec.Code >= 300 {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	var obj runtime.Object = &corev1.ConfigMap{}
	if bytes.Contains(rec.Body.Bytes(), []byte(`"kind":"ConfigMapList"`)) {
		obj = &corev1.ConfigMapList{}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), obj); err != nil {
		http.Error(w, "decode fake's answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := codec.Encode(obj, &buf); err != nil {
		http.Error(w, "encode protobuf: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", mediaProtobuf)
	w.WriteHeader(rec.Code)
	w.Write(buf.Bytes())
	p.answers.Add(1)
}

// protoWatchWriter turns the fake's JSON event lines into Protobuf frames.
type protoWatchWriter struct {
	p    *protoFake
	w    http.ResponseWriter
	line []byte
}

func (pw *protoWatchWriter) Header() http.Header  { return pw.w.Header() }
func (pw *protoWatchWriter) WriteHeader(code int) { pw.w.WriteHeader(code) }
func (pw *protoWatchWriter) Flush()               { pw.w.(http.Flusher).Flush() }

func (pw *protoWatchWriter) Write(b []byte) (int, error) {
	pw.line = append(pw.line, b...)
	for {
		i := bytes.IndexByte(pw.line, '\n')
		if i < 0 {
			return len(b), nil
		}
		var ev struct {
			Type   string           `json:"type"`
			Object corev1.ConfigMap `json:"object"`
		}
		if err := json.Unmarshal(pw.line[:i], &ev); err != nil {
			return 0, err
		}
		pw.line = pw.line[i+1:]
		ev.Object.APIVersion, ev.Object.Kind = "v1", "ConfigMap"
		var obj bytes.Buffer
		if err := protoCodec(pw.p.t).Encode(&ev.Object, &obj); err != nil {
			return 0, err
		}
		frame, err := (&metav1.WatchEvent{Type: ev.Type, Object: runtime.RawExtension{Raw: obj.Bytes()}}).Marshal()
		if err != nil {
			return 0, err
		}
		if _, err := pw.w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
			return 0, err
		}
		pw.p.watchFrames.Add(1)
	}
}

// TestWorkloads_ClientGoWire runs the workloads of the client-go pass
// with the client-go wire's encodings against the fake API behind a
// Protobuf translator: every request body and answer of the timed loops
// must be Protobuf, and nothing may fail.
func TestWorkloads_ClientGoWire(t *testing.T) {
	pf := &protoFake{t: t, next: newFakeServer().routes()}
	srv := httptest.NewServer(pf)
	defer srv.Close()
	b := &bench{
		cfg: config{
			duration: 300 * time.Millisecond, maxOps: 100000, payloadBytes: 64,
			createClients: []int{4}, getClients: 4, getObjects: 20, rmwClients: 4,
			listObjects: 50, lists: 3, watchers: 5, writeRate: 100, watchWriters: 2, quiet: true,
			applyClients: 3, patchClients: 3, bulkObjects: 120, pageLimit: 50, pagedLists: 2,
		},
		c: newClient(srv.URL, 8), base: srv.URL, runID: "test", report: &Report{},
	}
	defer b.c.close()
	cg := newClient(srv.URL, 8)
	defer cg.close()
	b.wire = protoWire(" "+clientGo, cg)
	ctx := context.Background()
	for _, tc := range []struct {
		name                     string
		bodies, answers, watches bool
	}{
		{"create", true, true, false},
		{"get", false, true, false},
		{"rmw", true, true, false},
		{"list", false, true, false},
		{"apply", false, true, false},
		{"patch", false, true, false},
		{"paged-list", false, true, false},
		{"watch", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodies, answers, frames := pf.bodies.Load(), pf.answers.Load(), pf.watchFrames.Load()
			w, _ := findWorkload(tc.name)
			res, err := w.run(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Ops == 0 || r.Errors != 0 {
					t.Errorf("%s: ops=%d errors=%d (%s)", r.Workload, r.Ops, r.Errors, r.ErrSample)
				}
				for _, n := range r.Notes {
					// "items, JSON": the client-go list was answered in JSON.
					if strings.Contains(n, "WARNING") || strings.Contains(n, "items, JSON") && tc.name == "list" {
						t.Errorf("%s: %s", r.Workload, n)
					}
				}
			}
			if got := pf.bodies.Load() - bodies; tc.bodies && got == 0 {
				t.Error("no Protobuf request body")
			}
			if got := pf.answers.Load() - answers; tc.answers && got == 0 {
				t.Error("no answer asked for in Protobuf")
			}
			if got := pf.watchFrames.Load() - frames; tc.watches && got == 0 {
				t.Error("no Protobuf watch frame")
			}
		})
	}
}
