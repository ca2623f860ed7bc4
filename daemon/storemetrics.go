package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeapi/edgeapi/store"
)

// storeCollector exports the store's figures (store.Stats) under edgeapi_
// names, read once per scrape.
type storeCollector struct {
	stats func() store.Stats
}

// storeMetric is one figure of store.Stats.
type storeMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(store.Stats) float64
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var storeMetrics = []storeMetric{
	{prometheus.NewDesc("edgeapi_store_revision", "The store's current revision.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.Rev) }},
	{prometheus.NewDesc("edgeapi_store_compacted_revision", "The revision the change log is compacted up to.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.CompactedRev) }},
	{prometheus.NewDesc("edgeapi_store_commit_batches_total", "Group-commit transactions committed since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.Batches) }},
	{prometheus.NewDesc("edgeapi_store_batched_writes_total", "Successful writes the group-commit transactions held since start; divided by edgeapi_store_commit_batches_total it is the average batch size.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.BatchedWrites) }},
	{prometheus.NewDesc("edgeapi_store_max_batch_writes", "The most writes one group-commit transaction held since start.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.MaxBatchSeen) }},
	{prometheus.NewDesc("edgeapi_store_db_size_bytes", "Size of the SQLite database file.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.DBBytes) }},
	{prometheus.NewDesc("edgeapi_store_wal_size_bytes", "Size of the SQLite write-ahead log file.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.WALBytes) }},
	{prometheus.NewDesc("edgeapi_store_changelog_rows", "Rows in the change log.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.ChangeLogRows) }},
	{prometheus.NewDesc("edgeapi_store_checkpoints_total", "Background WAL checkpoints since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.Checkpoints) }},
	{prometheus.NewDesc("edgeapi_store_wal_resets_total", "Times the checkpointer reset the WAL to its start since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.WALResets) }},
	{prometheus.NewDesc("edgeapi_store_wal_resets_deferred_total", "Times the checkpointer put a WAL reset off because a read transaction did not end in time.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.WALResetsDeferred) }},
	{prometheus.NewDesc("edgeapi_store_no_space", "1 while the file system holding the database is full and creates and updates fail, else 0.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return boolFloat(s.NoSpace) }},
	{prometheus.NewDesc("edgeapi_store_no_space_entered_total", "Times the store entered the no-space state since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.NoSpaceEntered) }},
}

// Describe implements prometheus.Collector.
func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range storeMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(s))
	}
}
