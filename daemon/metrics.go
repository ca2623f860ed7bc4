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

// daemonMetrics are the daemon's Prometheus registry and the request
// metrics the API server records into it.
type daemonMetrics struct {
	registry *prometheus.Registry
	requests *httpapi.Metrics
}

// newDaemonMetrics creates the registry with the Go and process collectors,
// the store's figures and the request metrics.
func newDaemonMetrics(stats func() store.Stats) (*daemonMetrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	if err := reg.Register(storeCollector{stats: stats}); err != nil {
		return nil, fmt.Errorf("register store collector: %w", err)
	}
	requests, err := httpapi.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register request metrics: %w", err)
	}
	return &daemonMetrics{registry: reg, requests: requests}, nil
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
