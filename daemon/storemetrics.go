package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeapi/edgeapi/store"
)

// storeCollector exports, read once per scrape: the store's figures
// (store.Stats) under edgeapi_ names, with etcd's names for the quota;
// the object counts per resource (apiserver_storage_objects and
// apiserver_resource_objects) and the database size
// (apiserver_storage_size_bytes) with kube-apiserver's; the watch
// cache's figures and the garbage collector's queue depth. The sources
// other than stats are set once the API and the controllers exist,
// before the daemon serves; nil ones are left out.
type storeCollector struct {
	stats        func() store.Stats
	objectCounts func(fn func(resource string, n int64)) bool
	watchCache   func() store.WatchCacheMetrics
	gcDepth      func() int64
	// revisionsOnly leaves out the figures of the SQLite file (commit
	// batches, file sizes, quota) for a backend that has none: etcd
	// reports its own.
	revisionsOnly bool
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

// revisionMetrics is how many of storeMetrics, first, every backend
// reports: the revisions.
const revisionMetrics = 2

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
	{prometheus.NewDesc("edgeapi_store_wal_resets_forced_total", "Times the checkpointer reset a WAL past its force threshold by holding new reads back, since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.WALResetsForced) }},
	{prometheus.NewDesc("edgeapi_store_no_space", "1 while the file system holding the database is full and creates and updates fail, else 0.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return boolFloat(s.NoSpace) }},
	{prometheus.NewDesc("edgeapi_store_over_quota", "1 while the database has reached --quota-backend-bytes and creates and updates fail, else 0.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return boolFloat(s.OverQuota) }},
	{prometheus.NewDesc("edgeapi_store_quota_exceeded_total", "Times the store entered the over-quota state since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.QuotaExceeded) }},
	{prometheus.NewDesc("edgeapi_store_no_space_entered_total", "Times the store entered the no-space state since start.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.NoSpaceEntered) }},
}

// storageClusterID is the storage_cluster_id label of
// apiserver_storage_size_bytes: kube-apiserver names its etcd clusters
// "etcd-0", "etcd-1", ...; edgeapi has one SQLite database.
const storageClusterID = "sqlite-0"

var (
	storageObjectsDesc = prometheus.NewDesc("apiserver_storage_objects",
		"[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind.",
		[]string{"resource"}, nil)
	resourceObjectsDesc = prometheus.NewDesc("apiserver_resource_objects",
		"Number of stored objects at the time of last check split by kind.",
		[]string{"group", "resource"}, nil)
	storageSizeDesc = prometheus.NewDesc("apiserver_storage_size_bytes",
		"Size of the storage database file physically allocated in bytes: the SQLite database file and its WAL.",
		[]string{"storage_cluster_id"}, nil)
	quotaBytesDesc = prometheus.NewDesc("etcd_server_quota_backend_bytes",
		"Current backend storage quota size in bytes (--quota-backend-bytes; 0: no quota).", nil, nil)
	inUseBytesDesc = prometheus.NewDesc("etcd_mvcc_db_total_size_in_use_in_bytes",
		"Total size of the underlying database logically in use in bytes: the SQLite pages in use, which the quota counts. Measured only with a quota.", nil, nil)
	watchCacheEventsDesc = prometheus.NewDesc("edgeapi_watch_cache_events",
		"Events the watch cache holds.", nil, nil)
	watchCacheBytesDesc = prometheus.NewDesc("edgeapi_watch_cache_bytes",
		"Bytes of the values and shared encodings of the events the watch cache holds.", nil, nil)
	watchersDesc = prometheus.NewDesc("edgeapi_watch_cache_watchers",
		"Watchers reading from the watch cache: the API's watches and the controllers'.", nil, nil)
	watchersTooSlowDesc = prometheus.NewDesc("edgeapi_watch_cache_watchers_too_slow_total",
		"Watchers closed because they fell too far behind (the client resumes from its last resourceVersion).", nil, nil)
	gcQueueDepthDesc = prometheus.NewDesc("edgeapi_garbage_collector_queue_depth",
		"Committed writes the garbage collector has not handled yet.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{storageObjectsDesc, resourceObjectsDesc, storageSizeDesc, quotaBytesDesc, inUseBytesDesc,
		watchCacheEventsDesc, watchCacheBytesDesc, watchersDesc, watchersTooSlowDesc, gcQueueDepthDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for i, m := range storeMetrics {
		if c.revisionsOnly && i >= revisionMetrics {
			break
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(s))
	}
	if !c.revisionsOnly {
		// What the database takes on disk: its file and its WAL.
		ch <- prometheus.MustNewConstMetric(storageSizeDesc, prometheus.GaugeValue, float64(s.DBBytes+s.WALBytes), storageClusterID)
		ch <- prometheus.MustNewConstMetric(quotaBytesDesc, prometheus.GaugeValue, float64(s.QuotaBytes))
		if s.QuotaBytes > 0 {
			ch <- prometheus.MustNewConstMetric(inUseBytesDesc, prometheus.GaugeValue, float64(s.UsedBytes))
		}
	}
	if c.objectCounts != nil {
		c.objectCounts(func(resource string, n int64) {
			group, res := splitStorageResource(resource)
			ch <- prometheus.MustNewConstMetric(storageObjectsDesc, prometheus.GaugeValue, float64(n), resource)
			ch <- prometheus.MustNewConstMetric(resourceObjectsDesc, prometheus.GaugeValue, float64(n), group, res)
		})
	}
	if c.watchCache != nil {
		w := c.watchCache()
		ch <- prometheus.MustNewConstMetric(watchCacheEventsDesc, prometheus.GaugeValue, float64(w.Events))
		ch <- prometheus.MustNewConstMetric(watchCacheBytesDesc, prometheus.GaugeValue, float64(w.Bytes))
		ch <- prometheus.MustNewConstMetric(watchersDesc, prometheus.GaugeValue, float64(w.Watchers))
		ch <- prometheus.MustNewConstMetric(watchersTooSlowDesc, prometheus.CounterValue, float64(w.TooSlow))
	}
	if c.gcDepth != nil {
		ch <- prometheus.MustNewConstMetric(gcQueueDepthDesc, prometheus.GaugeValue, float64(c.gcDepth()))
	}
}
