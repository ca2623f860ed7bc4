package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// workload is one entry of the benchmark. A workload prepares its own
// objects (under names unique to the run), measures, and returns one or
// more report lines. To add one, write its run function and append it to
// workloads.
type workload struct {
	name string
	// desc is shown in -help.
	desc string
	// byDefault reports whether it runs when --workloads is not given.
	byDefault bool
	run       func(ctx context.Context, b *bench) ([]Result, error)
}

var workloads = []workload{
	{"create", "POST ~1 KiB ConfigMaps with unique names at each --create-clients level", true, runCreate},
	{"get", "GET random existing ConfigMaps by name at --get-clients", true, runGet},
	{"rmw", "read-modify-write: GET then PUT with that resourceVersion, each client on its own object, retry on 409", true, runRMW},
	{"list", "sequential full LISTs of --list-objects ConfigMaps in one namespace, as JSON and then as Protobuf", true, runList},
	{"apply", "server-side apply: --apply-clients managers each re-apply their own ~1 KiB ConfigMap with a changing value", false, runApply},
	{"patch", "JSON merge PATCH of one data key, --patch-clients clients each on its own object", false, runPatch},
	{"watch", "--watchers watches on one namespace while a writer creates at --write-rate; per-event delivery latency", false, runWatch},
	{"watch-ref", "physical-limit reference for watch: --watchers loopback HTTP/1.1 streams from a minimal server in the bench process, each event line written to all at --write-rate; no edgeapi. With watch in the same run, the ratio of p99s", false, runWatchRef},
	{"watch-ref-h2", "watch-ref over what client-go's transport uses: one TLS connection with HTTP/2, every watch a stream of it (1,000 streams per connection, as edgeapi and kube-apiserver allow); with tls-watch or --client clientgo's watch in the same run, the ratio of their HTTP/2 p99s to it", false, runWatchRefH2},
	{"watch-idle", "RSS with --idle-watchers idle watches open, then one event delivered to all", false, runWatchIdle},
	{"watch-idle-ref-h2", "floor reference for watch-idle's client-go pass: --idle-watchers idle watch streams on a minimal Go HTTP/2 server over TLS (the bench itself, in a process of its own; 1,000 streams per connection), and that process's RSS", false, runWatchIdleRefH2},
	{"watch-resume", "a watch from --bulk-objects events back (beyond the ring: the change log) catches up; events/s", false, runWatchResume},
	{"paged-list", "full LIST of --bulk-objects ConfigMaps at --page-limit per page, following continue tokens", false, runPagedList},
	{"compaction", "write latency while --compaction-rows change-log rows are compacted (own daemon, restarted)", false, runCompaction},
	{"backup", "backup time, longest write and WAL size of 64 writers during online backups of --backup-objects ConfigMaps (endpoint, and edgeapi backup beside the daemon); check and restore times (own daemon)", false, runBackup},
	{"big", "RSS with --big-objects ConfigMaps stored, and restart-to-ready time with them (also --big)", false, runBig},
	{"crds", "--crds CustomResourceDefinitions of ~20 KB posted at once: time until all Established, RSS per CRD, discovery with them", false, runCRDs},
	{"cr-create", "custom resource creates (20-field schema, two CEL rules) at 64 clients, after ConfigMap creates of the same size", false, runCRCreate},
	{"tls", "creates at --tls-create-clients and gets at --get-clients over plain HTTP, TLS HTTP/1.1 and client-go's HTTP/2 over TLS, kept alive, in one run; ratio TLS/plain", false, runTLS},
	{"tls-watch", "watch fan-out (--tls-watch-sizes) through client-go's HTTP/2 over TLS against plain HTTP/1.1 watches", false, runTLSWatch},
	{"tls-handshake", "new connections per second: full TLS handshakes with the client certificate, alone and with a GET each, and plain ones", false, runTLSHandshake},
	{"cr-list", "LIST of --list-objects custom resources against as many ConfigMaps of the same size", false, runCRList},
	{"metrics", "gets at --get-clients against two daemons of their own, metrics recording off (EDGEAPI_DISABLE_METRICS) and on, --metrics-rounds in alternating order; ratio on/off", false, runMetricsCost},
	{"informer", "client-go typed SharedInformer (Protobuf) for ConfigMaps: Start to HasSynced over --informer-objects in one namespace, and the server's CPU meanwhile", false, runInformer},
	{"list-ref", "reference for list: the raw SQLite scan of the list workload's rows (its query, every value read, nothing decoded) from the daemon's database opened read-only, --lists times; with list before it in the run, the ratios list/list-ref for JSON and Protobuf; with cr-list before it, the same scan of the custom resources' rows (list-ref-cr) and the ratio cr-list/list-ref-cr", false, runListRef},
	{"sqlite-ref", "reference for create-64: one goroutine inserting ~1 KiB ConfigMap rows (objects + change log) into a fresh SQLite file with the store's schema and pragmas (WAL, synchronous=FULL), 64 per transaction; rows/s, per-commit p50/p99, and the ratio create-64/sqlite-ref when create ran before it", false, runSQLiteRef},
}

func findWorkload(name string) (workload, bool) {
	for _, w := range workloads {
		if w.name == name {
			return w, true
		}
	}
	return workload{}, false
}

// Reference numbers printed next to results. Targets are edgeapi's goals;
// the kube-apiserver numbers were measured on the same kind of machine.
// Nothing asserts them.
const (
	targetCreate64 = "≥10,000/s, p99 ≤30 ms"
	kubeCreate64   = "1,400–1,650/s"
	targetGet16    = "≥20,000/s"
	kubeGet16      = "2,000–2,600/s"
	kubeRMW16      = "~600/s"
	targetList10k  = "≤60 ms"
	kubeList10k    = "131–136 ms"
	targetRSSIdle  = "≤30 MB"
	targetRSS100k  = "≤80 MB"
	targetStart100 = "≤0.5 s"
)

// Namespaces the workloads use. The timed create, get and rmw workloads
// share "bench" (as in the issue); list and watch get a namespace of their
// own per run so that what they read is exactly what they wrote.
const benchNamespace = "bench"

func configMapsURL(base, ns string) string {
	return base + "/api/v1/namespaces/" + ns + "/configmaps"
}

func runCreate(ctx context.Context, b *bench) ([]Result, error) {
	wi := b.w()
	if err := wi.ensure(ctx, b, benchNamespace); err != nil {
		return nil, err
	}
	tmpl := wi.configMaps(benchNamespace, b.cfg.payloadBytes)
	url := configMapsURL(wi.base, benchNamespace)
	var out []Result
	for _, clients := range b.cfg.createClients {
		r, err := b.runLoop(ctx, loopSpec{
			name: fmt.Sprintf("create-%d", clients), clients: clients, duration: b.cfg.duration, maxOps: b.cfg.maxOps,
			setup: func(_ context.Context, w *worker) error {
				w.name = fmt.Sprintf("c%d%s-%s-%d-", clients, strings.TrimSpace(wi.name), b.runID, w.id)
				return nil
			},
			op: func(ctx context.Context, w *worker) error {
				body := w.nextBody()
				w.buf = tmpl.appendCreate(w.buf[:0], w.name, w.seq, 0)
				w.seq++
				body.set(w.buf)
				return wi.send(ctx, http.MethodPost, url, body, &w.sink)
			},
		})
		if err != nil {
			return out, err
		}
		if clients == 64 {
			r.Target, r.KubeAPIServerRef = targetCreate64, kubeCreate64
		}
		out = append(out, r)
		b.logResult(r)
		if wi.proto && b.cfg.clientgoClientset {
			r, err := b.clientsetRun(ctx, "create", clients, nil)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func runGet(ctx context.Context, b *bench) ([]Result, error) {
	n := b.cfg.getObjects
	prefix := "get" + strings.TrimSpace(b.w().name) + "-" + b.runID + "-"
	b.logf("get: seeding %d ConfigMaps", n)
	if _, err := b.seedConfigMaps(ctx, benchNamespace, prefix, n, 32); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	wi := b.w()
	if err := wi.ensure(ctx, b, benchNamespace); err != nil {
		return nil, err
	}
	urls := make([]string, n)
	for i := range urls {
		urls[i] = configMapsURL(wi.base, benchNamespace) + "/" + prefix + strconv.Itoa(i)
	}
	clients := b.cfg.getClients
	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("get-%d", clients),
		clients:  clients,
		duration: b.cfg.duration,
		maxOps:   b.cfg.maxOps,
		op: func(ctx context.Context, w *worker) error {
			n, err := wi.read(ctx, urls[w.rng.IntN(len(urls))], &w.sink)
			w.bytes += n
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if clients == 16 {
		r.Target, r.KubeAPIServerRef = targetGet16, kubeGet16
	}
	r.note("%d objects", n)
	b.logResult(r)
	out := []Result{r}
	if wi.proto && b.cfg.clientgoClientset {
		names := make([]string, n)
		for i := range names {
			names[i] = prefix + strconv.Itoa(i)
		}
		r, err := b.clientsetRun(ctx, "get", clients, names)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// maxRMWAttempts bounds the retries of one read-modify-write on conflict.
const maxRMWAttempts = 10

func runRMW(ctx context.Context, b *bench) ([]Result, error) {
	clients := b.cfg.rmwClients
	prefix := "rmw" + strings.TrimSpace(b.w().name) + "-" + b.runID + "-"
	if _, err := b.seedConfigMaps(ctx, benchNamespace, prefix, clients, clients); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	wi := b.w()
	if err := wi.ensure(ctx, b, benchNamespace); err != nil {
		return nil, err
	}
	tmpl := wi.configMaps(benchNamespace, b.cfg.payloadBytes)
	var url []string
	for i := range clients {
		url = append(url, configMapsURL(wi.base, benchNamespace)+"/"+prefix+strconv.Itoa(i))
	}
	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("rmw-put-%d", clients),
		clients:  clients,
		duration: b.cfg.duration,
		maxOps:   b.cfg.maxOps,
		setup: func(_ context.Context, w *worker) error {
			w.name = prefix + strconv.Itoa(w.id)
			return nil
		},
		op: func(ctx context.Context, w *worker) error {
			for range maxRMWAttempts {
				if _, err := wi.read(ctx, url[w.id], &w.sink); err != nil {
					return fmt.Errorf("get: %w", err)
				}
				rv := wi.resourceVersion(w.sink.Bytes())
				if rv == nil {
					return errors.New("get: response has no metadata.resourceVersion")
				}
				body := w.nextBody()
				w.buf = tmpl.appendUpdate(w.buf[:0], w.name, rv, w.seq)
				w.seq++
				body.set(w.buf)
				err := wi.send(ctx, http.MethodPut, url[w.id], body, &w.sink)
				if err == nil {
					return nil
				}
				if statusOf(err) != 409 {
					return fmt.Errorf("put: %w", err)
				}
				w.conflicts++
			}
			return fmt.Errorf("put: %d conflicts in a row", maxRMWAttempts)
		},
	})
	if err != nil {
		return nil, err
	}
	r.KubeAPIServerRef = kubeRMW16
	r.note("one op = GET + PUT (+ retries); %d conflicts", r.Conflicts)
	b.logResult(r)
	return []Result{r}, nil
}

// resourceVersionOf returns the object's metadata.resourceVersion, found by
// a byte search, or by decoding when the encoder spaced its JSON.
func resourceVersionOf(b []byte) []byte {
	if rv := findResourceVersion(b); rv != nil {
		return rv
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &obj) != nil || obj.Metadata.ResourceVersion == "" {
		return nil
	}
	return []byte(obj.Metadata.ResourceVersion)
}

func runList(ctx context.Context, b *bench) ([]Result, error) {
	n := b.cfg.listObjects
	ns := "bench-list" + strings.TrimSpace(b.w().name) + "-" + b.runID
	b.logf("list: seeding %d ConfigMaps in %s", n, ns)
	rate, err := b.seedConfigMaps(ctx, ns, "l-", n, 64)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	b.logf("list: seeded at %.0f/s", rate)
	wi := b.w()
	if err := wi.ensure(ctx, b, ns); err != nil {
		return nil, err
	}
	url := configMapsURL(wi.base, ns)

	// One untimed LIST checks the count and warms up.
	var sink bytes.Buffer
	if _, err := wi.read(ctx, url, &sink); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	list, err := decodeList(sink.Bytes())
	if err != nil {
		return nil, fmt.Errorf("list: decode: %w", err)
	}

	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("list-%s", shortCount(n)),
		clients:  1,
		duration: b.cfg.duration * 10, // bounded by count
		maxOps:   int64(b.cfg.lists),
		op: func(ctx context.Context, w *worker) error {
			n, err := wi.read(ctx, url, &w.sink)
			w.bytes = n
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	r.Value, r.Unit = float64(sink.Len())/(1<<20), "MiB"
	r.note("response %.2f MiB, %d items, %s", r.Value, list.items, list.encoding)
	if list.items != n || list.cont != "" {
		r.note("WARNING: expected %d items in one page, got %d (continue=%q)", n, list.items, list.cont)
	}
	r.note("seeded at %.0f creates/s (64 clients)", rate)
	if n == 10000 {
		r.Target, r.KubeAPIServerRef = targetList10k, kubeList10k
	}
	b.logResult(r)
	b.listNS = ns

	// The same LIST as Protobuf, as client-go's typed informers ask
	// for it. The untimed one checks the answer's envelope.
	if code, _, err := wi.c.doHeader(ctx, "GET", url, hdrProtobuf, nil, &sink); err != nil || code != 200 {
		return nil, fmt.Errorf("list as protobuf: %d %v", code, err)
	}
	protoOK := bytes.HasPrefix(sink.Bytes(), []byte("k8s\x00"))
	head := sink.Bytes()[:min(sink.Len(), 16)]
	pr, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("list-%s-protobuf", shortCount(n)),
		clients:  1,
		duration: b.cfg.duration * 10, // bounded by count
		maxOps:   int64(b.cfg.lists),
		op: func(ctx context.Context, w *worker) error {
			_, n, err := wi.c.doHeader(ctx, "GET", url, hdrProtobuf, nil, &w.sink)
			w.bytes = n
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	pr.Value, pr.Unit = float64(sink.Len())/(1<<20), "MiB"
	pr.note("response %.2f MiB (Accept: application/vnd.kubernetes.protobuf)", pr.Value)
	if !protoOK {
		pr.note("WARNING: the answer is not Protobuf: it starts %q", head)
	}
	if r.Latency != nil && pr.Latency != nil && r.Latency.P50MS > 0 {
		pr.note("Protobuf/JSON p50: %.2f×", pr.Latency.P50MS/r.Latency.P50MS)
	}
	if r.ServerCPU > 0 && pr.ServerCPU > 0 && r.OpsPerSec > 0 && pr.OpsPerSec > 0 {
		jc, pc := 1000*r.ServerCPU/r.OpsPerSec, 1000*pr.ServerCPU/pr.OpsPerSec
		pr.note("server CPU per LIST: JSON %.1f ms, Protobuf %.1f ms: %.2f×", jc, pc, pc/jc)
	}
	if n == 10000 {
		pr.Target, pr.KubeAPIServerRef = targetList10k, kubeList10k
	}
	b.logResult(pr)
	return []Result{r, pr}, nil
}

// shortCount renders 10000 as "10k" and 1000000 as "1M".
func shortCount(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// settle waits d, or less if ctx ends.
func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
