package main

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeapi/edgeapi/store"
)

// etcdRequestBuckets are kube-apiserver's buckets for
// etcd_request_duration_seconds (the same as its request latency's).
var etcdRequestBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// diskBuckets are etcd's buckets for etcd_disk_backend_commit_duration_seconds
// and etcd_disk_wal_fsync_duration_seconds: 1 ms to 8.192 s, doubling.
var diskBuckets = prometheus.ExponentialBuckets(0.001, 2, 14)

// batchSizeBuckets are the group-commit batch sizes, in writes: 1 to
// store.DefaultMaxBatch, doubling.
var batchSizeBuckets = prometheus.ExponentialBuckets(1, 2, 9)

// compactionBuckets are compaction durations: 1 ms to about 9 minutes
// (a 1M-row compaction takes over a minute, see store/compaction.go).
var compactionBuckets = prometheus.ExponentialBuckets(0.001, 4, 11)

// maxObservedResources bounds the resources etcd_request_duration_seconds
// keeps series for (they come from the kinds served, CRDs included);
// requests of further ones are recorded under resource "other".
const maxObservedResources = 1024

// storeObserver is the store's Observer: it records
// etcd_request_duration_seconds, etcd_requests_total and
// etcd_request_errors_total with kube-apiserver's names, labels and
// buckets, and the group-commit and compaction figures under edgeapi_
// names. Each series is resolved once, so that recording is a map lookup
// and atomic updates, without allocating.
type storeObserver struct {
	requests      *prometheus.HistogramVec
	requestsTotal *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	batchSize     prometheus.Histogram
	commit        prometheus.Histogram
	commitFsync   prometheus.Histogram
	compactions   [store.NumCompactionTriggers]prometheus.Counter
	compactionDur [store.NumCompactionTriggers]prometheus.Observer

	mu sync.RWMutex
	// byResource are the resolved request series per store resource
	// (Key.Resource) and operation; nil until first used.
	byResource map[string]*[store.NumOps]*requestSeries
	// other are the series of the resources past maxObservedResources.
	other [store.NumOps]*requestSeries
}

// requestSeries are the resolved series of one operation on one
// resource.
type requestSeries struct {
	duration      prometheus.Observer
	total, errors prometheus.Counter
}

var _ store.Observer = (*storeObserver)(nil)

// newStoreObserver creates the store's metrics and registers them with
// reg.
func newStoreObserver(reg prometheus.Registerer) (*storeObserver, error) {
	o := &storeObserver{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and object type: here, requests to the SQLite store (a get the object cache answers is not one).",
			Buckets: etcdRequestBuckets,
		}, []string{"operation", "group", "resource"}),
		requestsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: "Etcd request counts for each operation and object type: here, requests to the SQLite store.",
		}, []string{"operation", "group", "resource"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_request_errors_total",
			Help: "Etcd failed request counts for each operation and object type: here, requests the SQLite store failed (not its answers such as not found or conflict).",
		}, []string{"operation", "group", "resource"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgeapi_store_commit_batch_size",
			Help:    "Writes per committed group-commit transaction.",
			Buckets: batchSizeBuckets,
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgeapi_store_commit_duration_seconds",
			Help:    "Time a committed group-commit transaction took, from BEGIN to the end of COMMIT.",
			Buckets: diskBuckets,
		}),
		commitFsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgeapi_store_commit_fsync_duration_seconds",
			Help:    "Time the COMMIT statement of a group-commit transaction took: writing the WAL frames and fsyncing the WAL.",
			Buckets: diskBuckets,
		}),
		byResource: make(map[string]*[store.NumOps]*requestSeries),
	}
	compactions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeapi_store_compactions_total",
		Help: "Change-log compactions run, by trigger: interval (--compaction-interval), size (--compaction-max-rows) or quota (--quota-backend-bytes).",
	}, []string{"trigger"})
	compactionDur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "edgeapi_store_compaction_duration_seconds",
		Help:    "Time a change-log compaction took, by trigger, vacuum steps and the pauses between them included.",
		Buckets: compactionBuckets,
	}, []string{"trigger"})
	for _, c := range []prometheus.Collector{o.requests, o.requestsTotal, o.requestErrors, o.batchSize, o.commit, o.commitFsync, compactions, compactionDur} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for t := range store.NumCompactionTriggers {
		o.compactions[t] = compactions.WithLabelValues(t.String())
		o.compactionDur[t] = compactionDur.WithLabelValues(t.String())
	}
	return o, nil
}

// ObserveRequest implements store.Observer.
func (o *storeObserver) ObserveRequest(op store.Op, resource string, d time.Duration, failed bool) {
	if op >= store.NumOps {
		return
	}
	o.mu.RLock()
	var rs *requestSeries
	if s := o.byResource[resource]; s != nil {
		rs = s[op]
	}
	o.mu.RUnlock()
	if rs == nil {
		rs = o.resolve(op, resource)
	}
	rs.duration.Observe(d.Seconds())
	rs.total.Inc()
	if failed {
		rs.errors.Inc()
	}
}

// resolve finds or creates the series of op on resource. Series are
// created as they are first used, so that a scrape shows the operations
// that happened.
func (o *storeObserver) resolve(op store.Op, resource string) *requestSeries {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.byResource[resource]
	group, res := splitStorageResource(resource)
	switch {
	case s != nil:
	case len(o.byResource) >= maxObservedResources:
		s, group, res = &o.other, "", "other"
	default:
		s = new([store.NumOps]*requestSeries)
		o.byResource[strings.Clone(resource)] = s
	}
	if s[op] == nil {
		name := op.String()
		s[op] = &requestSeries{
			duration: o.requests.WithLabelValues(name, group, res),
			total:    o.requestsTotal.WithLabelValues(name, group, res),
			errors:   o.requestErrors.WithLabelValues(name, group, res),
		}
	}
	return s[op]
}

// splitStorageResource splits a store resource ("configmaps",
// "leases.coordination.k8s.io") into its group and resource: resource
// names have no dots, so the group is what follows the first.
func splitStorageResource(s string) (group, resource string) {
	resource, group, _ = strings.Cut(s, ".")
	return group, resource
}

// ObserveCommit implements store.Observer.
func (o *storeObserver) ObserveCommit(writes int, total, commit time.Duration) {
	o.batchSize.Observe(float64(writes))
	o.commit.Observe(total.Seconds())
	o.commitFsync.Observe(commit.Seconds())
}

// ObserveCompaction implements store.Observer.
func (o *storeObserver) ObserveCompaction(trigger store.CompactionTrigger, d time.Duration) {
	if trigger >= store.NumCompactionTriggers {
		return
	}
	o.compactions[trigger].Inc()
	o.compactionDur[trigger].Observe(d.Seconds())
}
