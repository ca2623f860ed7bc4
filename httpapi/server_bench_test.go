package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// newBenchServer runs a Server over real SQLite behind httptest.
func newBenchServer(b *testing.B) (*httptest.Server, *store.DB) {
	ts, db, _ := newBenchServerRegistry(b)
	return ts, db
}

// newBenchServerRegistry is newBenchServer that also returns the served
// registry, for benchmarks and tests that add kinds.
func newBenchServerRegistry(b testing.TB) (*httptest.Server, *store.DB, *registry.Registry) {
	b.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.Builtin()
	s, err := New(Config{Store: db, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	b.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
		_ = db.Close()
	})
	return ts, db, reg
}

var benchPayload = strings.Repeat("x", 1000)

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
}

// BenchmarkServer_Create measures POST of ~1 KiB ConfigMaps from 64
// concurrent clients, end to end over HTTP.
func BenchmarkServer_Create(b *testing.B) {
	ts, db := newBenchServer(b)
	client := benchClient()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	cpu := startCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, benchPayload)
			resp, err := client.Post(ts.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	cpu.report()
	st := db.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.BatchedWrites)/float64(st.Batches), "writes/batch")
	}
}

// BenchmarkServer_Get measures GET by name from 16 concurrent clients.
func BenchmarkServer_Get(b *testing.B) {
	ts, _ := newBenchServer(b)
	client := benchClient()
	const objects = 1000
	for i := 0; i < objects; i++ {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, benchPayload)
		resp, err := client.Post(ts.URL+"/api/v1/namespaces/default/configmaps", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1) % objects
			resp, err := client.Get(fmt.Sprintf("%s/api/v1/namespaces/default/configmaps/cm-%d", ts.URL, i))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// gadgetCRD is the custom resource of scripts/bench's cr-create workload:
// a spec of 20 fields (strings, integers, lists, and objects with a
// default) plus notes, two CEL rules on spec, and a status.
func gadgetCRD(b testing.TB) *apiextensionsv1.CustomResourceDefinition {
	b.Helper()
	props := map[string]any{}
	for i := range 20 {
		name := fmt.Sprintf("field%02d", i)
		switch i % 4 {
		case 0:
			props[name] = map[string]any{"type": "string", "maxLength": 253, "description": "A string setting."}
		case 1:
			props[name] = map[string]any{"type": "integer", "minimum": 0, "maximum": 65535, "description": "A numeric setting."}
		case 2:
			props[name] = map[string]any{"type": "array", "maxItems": 16, "items": map[string]any{"type": "string", "maxLength": 63}}
		default:
			props[name] = map[string]any{"type": "object", "properties": map[string]any{
				"enabled": map[string]any{"type": "boolean", "default": false},
				"mode":    map[string]any{"type": "string", "enum": []string{"auto", "manual", "off"}},
				"limit":   map[string]any{"type": "integer", "minimum": 1},
			}}
		}
	}
	props["notes"] = map[string]any{"type": "string"}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.bench.example.com"},
		"spec": map[string]any{
			"group": "bench.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": props, "x-kubernetes-validations": []any{
						map[string]any{"rule": "self.field01 <= 60000", "message": "field01 must be at most 60000"},
						map[string]any{"rule": "!has(self.field00) || self.field00.size() > 0", "message": "field00 must not be empty"},
					}},
					"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
				}}}}},
		},
	}
	js, err := json.Marshal(crd)
	if err != nil {
		b.Fatal(err)
	}
	var out apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(js, &out); err != nil {
		b.Fatal(err)
	}
	return &out
}

// BenchmarkServer_CreateCustomResource measures POST of Gadgets (the
// cr-create workload's custom resource, about 1 KiB) from 64 concurrent
// clients, end to end over HTTP, beside the ConfigMaps of
// BenchmarkServer_Create; the allocations per operation are the figure
// to compare between versions.
func BenchmarkServer_CreateCustomResource(b *testing.B) {
	ts, db, reg := newBenchServerRegistry(b)
	kinds, err := registry.CustomResourceKinds(gadgetCRD(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range kinds {
		reg.Add(k)
	}
	client := benchClient()
	url := ts.URL + "/apis/bench.example.com/v1/namespaces/default/gadgets"
	var n atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"g-%d"},"spec":{"notes":%q,`+
				`"field00":"a","field01":8080,"field02":["a","b"],"field03":{"enabled":true,"mode":"auto","limit":3}}}`, i, benchPayload[:824])
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	st := db.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.BatchedWrites)/float64(st.Batches), "writes/batch")
	}
}
