package httpapi

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetrics_resolveOverflow checks that label sets past maxRequestSeries
// are counted under the "other" series instead of growing the map.
func TestMetrics_resolveOverflow(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	const extra = 10
	for i := range maxRequestSeries + extra {
		m.record(requestKey{verb: "GET", version: "v1", resource: "r" + strconv.Itoa(i), scope: "cluster", code: 404}, time.Millisecond)
	}
	if got, want := len(m.series), maxRequestSeries+1; got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var other float64
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_request_total" {
			other = counterWith(mf, map[string]string{"resource": "other", "code": "404"})
		}
	}
	if other != extra {
		t.Errorf("apiserver_request_total{resource=\"other\"}: got %v, want %d", other, extra)
	}
}
