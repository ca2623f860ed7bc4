package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The write benchmarks below are the bench tool's rmw, patch and apply
// workloads through the real handler over HTTP: 16 clients, each on its
// own ~1 KiB ConfigMap. Their allocations per operation, and the CPU
// profiles they give, are the figures to compare between versions; the
// time per operation includes the clients and the fsyncs.

const benchWriteClients = 16

// benchWrite runs op from benchWriteClients clients after seeding one
// ConfigMap per client; op gets the client's object URL and a counter.
func benchWrite(b *testing.B, seed bool, op func(client *http.Client, url string, i int64) (*http.Response, error)) {
	ts, db := newBenchServer(b)
	client := benchClient()
	base := ts.URL + "/api/v1/namespaces/default/configmaps"
	if seed {
		for i := range benchWriteClients {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"k":%q,"n":"0"}}`, i, benchPayload)
			resp, err := client.Post(base, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Fatalf("seed: status %d", resp.StatusCode)
			}
		}
	}
	var clients, n atomic.Int64
	b.SetParallelism((benchWriteClients + 1) / 2)
	b.ReportAllocs()
	cpu := startCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := (clients.Add(1) - 1) % benchWriteClients
		url := fmt.Sprintf("%s/cm-%d", base, id)
		for pb.Next() {
			resp, err := op(client, url, n.Add(1))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
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

// BenchmarkServer_Update measures PUT of a ~1 KiB ConfigMap with one data
// value changed, without a resourceVersion (ConfigMaps allow that), from
// 16 clients each on its own object.
func BenchmarkServer_Update(b *testing.B) {
	benchWrite(b, true, func(client *http.Client, url string, i int64) (*http.Response, error) {
		name := url[strings.LastIndexByte(url, '/')+1:]
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"k":%q,"n":"%d"}}`, name, benchPayload, i)
		req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	})
}

// BenchmarkServer_MergePatch measures a JSON merge PATCH of one data key of
// a ~1 KiB ConfigMap from 16 clients each on its own object.
func BenchmarkServer_MergePatch(b *testing.B) {
	benchWrite(b, true, func(client *http.Client, url string, i int64) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPatch, url, strings.NewReader(fmt.Sprintf(`{"data":{"n":"%d"}}`, i)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/merge-patch+json")
		return client.Do(req)
	})
}

// BenchmarkServer_Apply measures server-side apply of a ~1 KiB ConfigMap
// with one changing value, 16 managers each on its own object (the first
// apply of each creates it).
func BenchmarkServer_Apply(b *testing.B) {
	benchWrite(b, false, func(client *http.Client, url string, i int64) (*http.Response, error) {
		name := url[strings.LastIndexByte(url, '/')+1:]
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"k":%q,"n":"%d"}}`, name, benchPayload, i)
		req, err := http.NewRequest(http.MethodPatch, url+"?fieldManager=m-"+name, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/apply-patch+yaml")
		return client.Do(req)
	})
}

// cpuMeter reports the process's CPU time (user and system, server and
// clients together) per operation as "cpu-µs/op": on a shared machine a
// steadier figure than the time per operation.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuMeter { return cpuMeter{b, processCPU(b)} }

func (m cpuMeter) report() {
	if m.b.N > 0 {
		m.b.ReportMetric(float64((processCPU(m.b)-m.start).Microseconds())/float64(m.b.N), "cpu-µs/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
