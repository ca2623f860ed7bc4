package controller

import "github.com/prometheus/client_golang/prometheus"

// leaderDesc is edgeapi_controller_leader: whether this replica runs the
// controllers that write.
var leaderDesc = prometheus.NewDesc("edgeapi_controller_leader",
	"1 when this replica runs the controllers that write (it holds the controller Lease, or there is no leader election: SQLite), else 0.",
	nil, nil)

// Describe and Collect make the Manager a prometheus.Collector of
// edgeapi_controller_leader, read at scrape time.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) { ch <- leaderDesc }

// Collect sends edgeapi_controller_leader.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if m.Leading() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, v)
}
