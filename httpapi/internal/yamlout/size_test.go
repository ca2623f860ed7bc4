package yamlout

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// bigObject returns a JSON object of n members ("k000000": "v0", ...)
// like a ConfigMap's data with many small values.
func bigObject(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%06d":"v%d"`, (i*7919)%n, i%10)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// configMap is a typical ConfigMap as the API answers it (about 2 KB).
const configMap = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"app-config","namespace":"default","uid":"3f6e1a2b-8c4d-4e5f-9a0b-1c2d3e4f5a6b","resourceVersion":"123456","creationTimestamp":"2024-05-01T12:00:00Z","labels":{"app.kubernetes.io/name":"app","app.kubernetes.io/part-of":"shop","tier":"backend"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"data\":{\"LOG_LEVEL\":\"info\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"app-config\",\"namespace\":\"default\"}}\n"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2024-05-01T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:LOG_LEVEL":{},"f:app.properties":{},"f:PORT":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:tier":{}}}}}]},"data":{"LOG_LEVEL":"info","PORT":"8080","ENABLED":"true","RATIO":"0.75","app.properties":"server.port=8080\nserver.host=0.0.0.0\ndatabase.url=jdbc:postgresql://db.default.svc.cluster.local:5432/shop\ndatabase.pool.size=20\ncache.ttl=300\nfeature.flags=checkout,search,recommendations\n","nginx.conf":"server {\n    listen 80;\n    location / {\n        proxy_pass http://127.0.0.1:8080;\n    }\n}\n","motd":"Welcome to the shop backend. This message is long enough that go-yaml folds it past the eightieth column of the output."}}`

// allocated returns the YAML of src and the bytes Append allocated.
func allocated(t *testing.T, src []byte) ([]byte, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := Append(nil, src)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return out, after.TotalAlloc - before.TotalAlloc
}

// TestAppend_Memory: converting a 3 MB object of 250,000 members
// allocates less than three times its size (go-yaml took 620 MB).
func TestAppend_Memory(t *testing.T) {
	src := bigObject(250000)
	out, alloc := allocated(t, src)
	t.Logf("%d bytes of JSON, %d of YAML: allocated %d bytes (%.2fx)", len(src), len(out), alloc, float64(alloc)/float64(len(src)))
	if alloc > 3*uint64(len(src)) {
		t.Errorf("allocated %d bytes for %d bytes of JSON, want less than 3x", alloc, len(src))
	}
	if want, err := reference(src); err != nil || !bytes.Equal(out, want) {
		t.Errorf("the YAML differs from go-yaml's (%v)", err)
	}
}

// TestAppend_MemoryShapes: other 3 MB documents allocate a small multiple
// of their JSON and YAML: the YAML itself, the index of arrays and
// objects (12 bytes each) and the members of the objects being written.
func TestAppend_MemoryShapes(t *testing.T) {
	tests := []struct {
		name string
		src  string
		max  float64 // allocated / (JSON + YAML)
	}{
		{"numbers", "[" + strings.Repeat("1,", 1500000) + "1]", 1},
		{"empty arrays", "[" + strings.Repeat("[],", 1000000) + "[]]", 2.5},
		{"small arrays", "[" + strings.Repeat("[0],", 750000) + "[]]", 2.5},
		{"small objects", "[" + strings.Repeat(`{"a":{"b":0}},`, 200000) + "1]", 2},
		{"long strings", "[" + strings.Repeat(`"`+strings.Repeat("word ", 200)+`",`, 3000) + "1]", 1},
		{"deep", strings.Repeat(`{"a":[`, 5000) + strings.Repeat("]}", 5000), 4}, // quadratic indentation
	}
	for _, tt := range tests {
		out, alloc := allocated(t, []byte(tt.src))
		ratio := float64(alloc) / float64(len(tt.src)+len(out))
		t.Logf("%s: %d bytes of JSON, %d of YAML: allocated %d bytes (%.2fx their sum)", tt.name, len(tt.src), len(out), alloc, ratio)
		if ratio > tt.max {
			t.Errorf("%s: allocated %.2fx the JSON and YAML, want at most %.1fx", tt.name, ratio, tt.max)
		}
	}
}

// BenchmarkAppend converts a 2 KB ConfigMap and the 3 MB object with
// yamlout and with go-yaml (the reference). On a loaded 2-core machine:
// ConfigMap 57-73 µs, 3.9 KB, 18 allocations (go-yaml 158-222 µs,
// 68.5 KB, 420); 3 MB object 0.39-0.97 s (about 0.2 s of CPU), 7.3 MB,
// 5 allocations (go-yaml 2.3-3.5 s, 621 MB, 2.25 million).
func BenchmarkAppend(b *testing.B) {
	for _, bm := range []struct {
		name string
		src  []byte
	}{
		{"ConfigMap2KB", []byte(configMap)},
		{"Object3MB", bigObject(250000)},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Append(nil, bm.src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bm.name+"/goyaml", func(b *testing.B) {
			b.SetBytes(int64(len(bm.src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reference(bm.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
