package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// requestDurationBuckets are kube-apiserver's buckets for
// apiserver_request_duration_seconds, so that its dashboards and SLO
// alerts read edgeapi's histogram the same way.
var requestDurationBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// maxRequestSeries bounds how many label sets the request metrics keep:
// the labels come from the URL, and a client asking for many made-up
// resources must not grow the server without bound. Requests past it are
// counted under an overflow series whose labels are all "other".
const maxRequestSeries = 4096

// watchEventSizeBuckets are kube-apiserver's buckets for
// apiserver_watch_events_sizes: 1 KiB to 128 KiB, doubling.
var watchEventSizeBuckets = prometheus.ExponentialBuckets(1024, 2, 8)

// Metrics are the request metrics of kube-apiserver that edgeapi records:
// apiserver_request_total, apiserver_request_duration_seconds,
// apiserver_current_inflight_requests, apiserver_longrunning_requests,
// apiserver_request_terminations_total, apiserver_watch_events_total and
// apiserver_watch_events_sizes, with kube-apiserver's names and labels.
// Create it with NewMetrics and pass it as Config.Metrics.
type Metrics struct {
	total        *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inflight     *prometheus.GaugeVec
	longRunning  *prometheus.GaugeVec
	terminations *prometheus.CounterVec
	watchEvents  *prometheus.CounterVec
	watchSizes   *prometheus.HistogramVec

	readOnly, mutating prometheus.Gauge

	mu sync.RWMutex
	// series are the resolved counter and histogram per label set, so
	// that recording a request is a map lookup and two atomic updates.
	series map[requestKey]requestSeries
	// terminated are the resolved termination counters per label set,
	// bounded as series is.
	terminated map[requestKey]prometheus.Counter
	// watches are the resolved watch event metrics per group, version
	// and resource (kinds served, so bounded by them).
	watches map[watchKey]*watchSeries
}

// watchKey is the label set of the watch event metrics.
type watchKey struct{ group, version, resource string }

// watchSeries are the resolved watch event metrics of one watchKey: a
// watch resolves them once and records each event it writes with two
// atomic updates.
type watchSeries struct {
	events prometheus.Counter
	sizes  prometheus.Observer
}

// sent records one event of size bytes written to a watch client; a nil
// s records nothing.
func (s *watchSeries) sent(size int) {
	if s == nil {
		return
	}
	s.events.Inc()
	s.sizes.Observe(float64(size))
}

// requestKey is the label set of one request, with the code as a number.
type requestKey struct {
	verb, dryRun, group, version, resource, subresource, scope string
	code                                                       int
}

// requestSeries are the resolved metrics of one requestKey.
type requestSeries struct {
	total    prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics creates the request metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: requestDurationBuckets,
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Number of requests being served, per request kind (readOnly or mutating), not counting long-running requests such as watches.",
		}, []string{"request_kind"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_terminations_total",
			Help: "Number of requests which apiserver terminated in self-defense.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients",
		}, []string{"group", "version", "resource"}),
		watchSizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_events_sizes",
			Help:    "Watch event size distribution in bytes",
			Buckets: watchEventSizeBuckets,
		}, []string{"group", "version", "resource"}),
		series:     make(map[requestKey]requestSeries),
		terminated: make(map[requestKey]prometheus.Counter),
		watches:    make(map[watchKey]*watchSeries),
	}
	for _, c := range []prometheus.Collector{m.total, m.duration, m.inflight, m.longRunning, m.terminations, m.watchEvents, m.watchSizes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.readOnly = m.inflight.WithLabelValues("readOnly")
	m.mutating = m.inflight.WithLabelValues("mutating")
	return m, nil
}

// metricsComponent is the component label of every request series, as
// kube-apiserver's.
const metricsComponent = "apiserver"

// record counts one finished request with the labels k and its duration.
// It does not allocate once the label set has been seen.
func (m *Metrics) record(k requestKey, elapsed time.Duration) {
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		s = m.resolve(k)
	}
	s.total.Inc()
	s.duration.Observe(elapsed.Seconds())
}

// resolve finds or creates the series of k, or the overflow series when
// there are maxRequestSeries already.
func (m *Metrics) resolve(k requestKey) requestSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.series[k]; ok {
		return s
	}
	if len(m.series) >= maxRequestSeries {
		k = requestKey{verb: "other", dryRun: "other", group: "other", version: "other", resource: "other", subresource: "other", scope: "other", code: k.code}
		if s, ok := m.series[k]; ok {
			return s
		}
	}
	// The key's strings point into the request's URL; the map keeps
	// copies.
	k = cloneKey(k)
	s := requestSeries{
		total:    m.total.WithLabelValues(k.verb, k.dryRun, k.group, k.version, k.resource, k.subresource, k.scope, metricsComponent, strconv.Itoa(k.code)),
		duration: m.duration.WithLabelValues(k.verb, k.dryRun, k.group, k.version, k.resource, k.subresource, k.scope, metricsComponent),
	}
	m.series[k] = s
	return s
}

// watch returns the resolved watch event metrics of group, version and
// resource; nil on a nil Metrics.
func (m *Metrics) watch(group, version, resource string) *watchSeries {
	if m == nil {
		return nil
	}
	k := watchKey{group, version, resource}
	m.mu.RLock()
	s := m.watches[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.watches[k]; s != nil {
		return s
	}
	s = &watchSeries{
		events: m.watchEvents.WithLabelValues(group, version, resource),
		sizes:  m.watchSizes.WithLabelValues(group, version, resource),
	}
	m.watches[k] = s
	return s
}

// terminate counts a request the server refused in self-defense with
// code (apiserver_request_terminations_total), and, when counted is
// false because the request never reached the instrumented handler, in
// apiserver_request_total too (as kube-apiserver's max-in-flight filter
// does; no duration is recorded for it).
func (m *Metrics) terminate(k requestKey, counted bool) {
	if !counted {
		m.resolve(k).total.Inc()
	}
	m.mu.RLock()
	c, ok := m.terminated[k]
	m.mu.RUnlock()
	if !ok {
		c = m.resolveTermination(k)
	}
	c.Inc()
}

// resolveTermination finds or creates the termination counter of k, or
// the overflow one when there are maxRequestSeries already.
func (m *Metrics) resolveTermination(k requestKey) prometheus.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.terminated[k]; ok {
		return c
	}
	if len(m.terminated) >= maxRequestSeries {
		k = requestKey{verb: "other", dryRun: "other", group: "other", version: "other", resource: "other", subresource: "other", scope: "other", code: k.code}
		if c, ok := m.terminated[k]; ok {
			return c
		}
	}
	k = cloneKey(k)
	c := m.terminations.WithLabelValues(k.verb, k.group, k.version, k.resource, k.subresource, k.scope, metricsComponent, strconv.Itoa(k.code))
	m.terminated[k] = c
	return c
}

// cloneKey copies k's strings, which may point into a request's URL.
func cloneKey(k requestKey) requestKey {
	return requestKey{
		verb: strings.Clone(k.verb), dryRun: strings.Clone(k.dryRun), group: strings.Clone(k.group),
		version: strings.Clone(k.version), resource: strings.Clone(k.resource),
		subresource: strings.Clone(k.subresource), scope: k.scope, code: k.code,
	}
}

// RecordDroppedRequest counts r, refused with 429 before it reached the
// API server (the max-in-flight limit), as kube-apiserver does: in
// apiserver_request_total and apiserver_request_terminations_total with
// code 429. Without Config.Metrics it does nothing.
func (s *Server) RecordDroppedRequest(r *http.Request) {
	if m := s.cfg.Metrics; m != nil {
		k := metricsKey(r, s.servesPath)
		k.code = http.StatusTooManyRequests
		m.terminate(k, false)
	}
}

// recordTermination counts r, which the API server answered with code
// in self-defense (the watch limit), in
// apiserver_request_terminations_total; instrumentAndAuthorize counts it
// in apiserver_request_total.
func (s *Server) recordTermination(r *http.Request, code int) {
	if m := s.cfg.Metrics; m != nil {
		k := metricsKey(r, s.servesPath)
		k.code = code
		m.terminate(k, true)
	}
}

// metricsKey describes req with the labels kube-apiserver gives it in its
// request metrics: the verb in capitals as its metrics report it (LIST
// and GET, WATCH, POST, PUT, PATCH or APPLY for a server-side apply,
// DELETE and DELETECOLLECTION), the group, version, resource and
// subresource of a resource request, and its scope ("resource" for one
// named object or a create, "namespace", "cluster"). A non-resource
// request has the method as its verb and its path as the subresource,
// and only the paths the server serves (known) are kept: any other is
// "other". The code is left for the caller.
func metricsKey(req *http.Request, known func(string) bool) requestKey {
	k := requestKey{verb: req.Method}
	q := req.URL.RawQuery
	if v, ok := queryValue(q, "dryRun"); ok && v == "All" {
		k.dryRun = "All"
	}
	var buf [8]string
	parts := splitPath(req.URL.Path, buf[:0])
	resource := false
	if len(parts) >= 3 {
		switch parts[0] {
		case "api":
			k.version, parts, resource = parts[1], parts[2:], true
		case "apis":
			if len(parts) >= 4 {
				k.group, k.version, parts, resource = parts[1], parts[2], parts[3:], true
			}
		}
	}
	if resource && parts[0] == "watch" {
		if len(parts) < 2 {
			resource = false
		} else {
			k.verb, parts = "WATCH", parts[1:]
		}
	}
	if !resource {
		k = requestKey{verb: req.Method, dryRun: k.dryRun, subresource: "other"}
		if known(req.URL.Path) {
			k.subresource = req.URL.Path
		}
		return k
	}
	namespace := ""
	if parts[0] == "namespaces" && len(parts) > 1 {
		namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	k.resource = parts[0]
	name := ""
	if len(parts) >= 2 {
		name = parts[1]
	}
	if len(parts) >= 3 {
		k.subresource = parts[2]
	}
	switch {
	case name != "" || req.Method == http.MethodPost:
		k.scope = "resource"
	case namespace != "":
		k.scope = "namespace"
	default:
		k.scope = "cluster"
	}
	switch k.verb {
	case http.MethodGet, http.MethodHead:
		if k.scope != "resource" {
			k.verb = "LIST"
			if v, ok := queryValue(q, "watch"); ok && v != "0" && !strings.EqualFold(v, "false") {
				k.verb = "WATCH"
			}
		}
	case http.MethodDelete:
		if k.scope != "resource" {
			k.verb = "DELETECOLLECTION"
		}
	case http.MethodPatch:
		if ct, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) == "application/apply-patch+yaml" {
			k.verb = "APPLY"
		}
	}
	return k
}

// queryValue is the first value of key in the raw query q, unescaped only
// when it needs no unescaping (the values metrics look at never do); ok
// is false when key is absent. It does not allocate.
func queryValue(q, key string) (string, bool) {
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k == key {
			return v, true
		}
	}
	return "", false
}

// instrumentAndAuthorize is the echo pre-routing middleware that records
// every request in Config.Metrics and authorizes it (authorizeRequests),
// so that refused requests are counted too. A watch counts as
// long-running while it runs, any other request as in flight. It is one
// middleware because echo wraps its pre-routing middleware around each
// request anew: each one is an allocation per request.
func (s *Server) instrumentAndAuthorize(next echo.HandlerFunc) echo.HandlerFunc {
	m := s.cfg.Metrics
	if m == nil {
		return s.authorizeRequests(next)
	}
	return func(c echo.Context) error {
		// What lives in this frame is what lives on the goroutine's stack
		// for as long as a watch runs: only the mark; the work before and
		// after is in functions of their own (see requestMark).
		var mark requestMark
		s.beginRequest(c.Request(), m, &mark)
		err := s.authorize(c, next)
		s.endRequest(c, m, &mark, err)
		return nil
	}
}

// requestMark is what instrumentAndAuthorize keeps across a request.
// beginRequest and endRequest are not inlined, so that their locals (the
// label values of WithLabelValues, the histogram's) are not in the frame
// under every running request: an idle HTTP/2 watch's frames must take
// less than a quarter of 16 KiB for the runtime to halve its stack to
// 8 KiB (TestWatch_IdleHTTP2StacksShrink), and on arm64 they did not.
type requestMark struct {
	key   requestKey
	gauge prometheus.Gauge
	start time.Time
}

// beginRequest labels req and counts it as long-running or in flight.
//
//go:noinline
func (s *Server) beginRequest(req *http.Request, m *Metrics, mark *requestMark) {
	mark.start = time.Now()
	mark.key = metricsKey(req, s.servesPath)
	k := &mark.key
	if k.verb == "WATCH" {
		mark.gauge = m.longRunning.WithLabelValues(k.verb, k.group, k.version, k.resource, k.subresource, k.scope, metricsComponent)
	} else if req.Method == http.MethodGet || req.Method == http.MethodHead {
		mark.gauge = m.readOnly
	} else {
		mark.gauge = m.mutating
	}
	mark.gauge.Inc()
}

// endRequest writes err's status (the error handler's, run here so that
// the code recorded is the one sent) and records the request.
//
//go:noinline
func (s *Server) endRequest(c echo.Context, m *Metrics, mark *requestMark, err error) {
	if err != nil {
		c.Error(err)
	}
	mark.gauge.Dec()
	k := mark.key
	k.code = c.Response().Status
	m.record(k, time.Since(mark.start))
	if k.code == http.StatusGatewayTimeout && errors.Is(c.Request().Context().Err(), context.DeadlineExceeded) {
		// The request's deadline (--request-timeout, ?timeout=)
		// passed: kube-apiserver's timeout filter counts it too.
		m.terminate(k, true)
	}
}

// servesPath reports whether p is a non-resource path the server serves.
func (s *Server) servesPath(p string) bool {
	switch p {
	case "/api", "/apis", "/version", "/version/", "/openapi/v2", "/openapi/v3", "/healthz", "/livez", "/readyz":
		return true
	}
	if strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/livez/") || strings.HasPrefix(p, "/readyz/") {
		return len(p) < 64
	}
	if strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/") {
		return true // discovery of a group version (bounded by maxRequestSeries)
	}
	_, ok := s.cfg.Extra[p]
	return ok
}
