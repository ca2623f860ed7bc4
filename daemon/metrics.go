package main

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edgeapi/edgeapi/httpapi"
	"github.com/edgeapi/edgeapi/store"
)

// metricsPath is where the daemon serves its metrics in the Prometheus
// text format, behind the API's authentication and authorization (a
// nonResourceURL, as kube-apiserver's /metrics).
const metricsPath = "/metrics"

// disableMetricsEnv, when set to a non-empty value, turns off recording
// on the request and store paths (the request, watch event and store
// request metrics), so that scripts/bench can measure what recording
// costs. The scrape-time figures are still served. A bench knob, not a
// setting: kube-apiserver has none.
const disableMetricsEnv = "EDGEAPI_DISABLE_METRICS"

// daemonMetrics are the daemon's Prometheus registry, the request
// metrics the API server records into it, the store's Observer and the
// collector of the figures read at scrape time.
type daemonMetrics struct {
	registry *prometheus.Registry
	// requests and observer are nil when recording is off
	// (disableMetricsEnv).
	requests *httpapi.Metrics
	observer store.Observer
	// collector's sources beyond the store's Stats are set once the API
	// and the controllers exist.
	collector *storeCollector
}

// newDaemonMetrics creates the registry with the Go and process
// collectors, the store's figures, the store's Observer and the request
// metrics. With record false the request and store-request metrics are
// registered but nothing records into them.
func newDaemonMetrics(stats func() store.Stats, record bool) (*daemonMetrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	m := &daemonMetrics{registry: reg, collector: &storeCollector{stats: stats}}
	if err := reg.Register(m.collector); err != nil {
		return nil, fmt.Errorf("register store collector: %w", err)
	}
	observer, err := newStoreObserver(reg)
	if err != nil {
		return nil, fmt.Errorf("register store metrics: %w", err)
	}
	requests, err := httpapi.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register request metrics: %w", err)
	}
	if record {
		m.requests, m.observer = requests, observer
	}
	return m, nil
}

// handler serves the registry's metrics; it answers only GET and HEAD.
func (m *daemonMetrics) handler() http.Handler {
	h := promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
