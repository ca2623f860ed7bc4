// Command bench is edgeapi's load generator. It drives a daemon over
// loopback HTTP with the Kubernetes resource API and prints throughput and
// latency (p50/p90/p99/max) for each workload, the daemon's RSS, start-up
// time, CPU use, and whatever store statistics the daemon exposes
// (/readyz?verbose, /debug/edgeapi/stats).
//
// By default it starts a fresh daemon itself:
//
//	go build -o bin/edgeapi ./daemon
//	go run ./scripts/bench --bin bin/edgeapi --json /tmp/bench.json
//
// or targets one already running:
//
//	go run ./scripts/bench --server http://127.0.0.1:6443 --pid 1234
//
// Workloads (--workloads, comma separated; see -help): create, get, rmw,
// list by default; apply, patch, watch, watch-ref (its physical-limit reference, no
// daemon involved), watch-idle, watch-resume,
// paged-list, compaction, backup, big (--big adds it), and the TLS comparisons
// tls, tls-watch and tls-handshake on request.
//
// The daemon it starts serves plain HTTP on --insecure-listen for the
// workloads and HTTPS on another loopback port, which the TLS workloads
// reach with the kubeconfig the daemon writes. --client clientgo runs the
// core workloads a second time as client-go connects (HTTP/2 over TLS, a
// token user checked by RBAC, Protobuf), beside the plain figures with
// their ratios (clientgo.go). --daemon-args passes serve
// flags through, e.g. --daemon-args "--authorization-mode=RBAC".
//
// --kube-ref runs the chosen workloads against edgeapi and then against
// kube-apiserver on etcd (scripts/kube-ref-build, scripts/kube-ref-start),
// both over TLS with a system:masters token, and prints the ratios; the
// informer workload times a client-go typed informer's initial sync (see
// kuberef.go and informer.go). With --client clientgo the client-go pass
// runs against kube-apiserver too, as a ServiceAccount token user bound by
// RBAC, and a second table sets client-go against client-go.
//
// The bench binary also answers `bench serve --data-dir DIR --insecure-listen ADDR`
// with a small in-memory fake of the API, to test this tool and measure its
// own overhead: `go build -o /tmp/bench ./scripts/bench && /tmp/bench --bin
// /tmp/bench`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var stderr io.Writer = os.Stderr

// config is the parsed command line.
type config struct {
	server   string
	bin      string
	pid      int
	keepData bool
	// daemonArgs are added to `serve` of the main daemon this tool starts.
	daemonArgs []string
	// readyTimeout bounds each wait for a started daemon's /readyz.
	readyTimeout time.Duration
	// memoryLimitMiB and rssMarginMiB make the peak-RSS check of each
	// workload: peak ≤ limit + margin, the margin 0 by default (see
	// rsspeak.go).
	memoryLimitMiB float64
	rssMarginMiB   float64

	workloads     []string
	duration      time.Duration
	maxOps        int64
	payloadBytes  int
	createClients []int
	getClients    int
	getObjects    int
	rmwClients    int
	listObjects   int
	crds          int
	crdFields     int
	lists         int
	coldLists     int
	settle        time.Duration

	bigObjects int
	bigIdle    time.Duration
	bigTimeout time.Duration

	watchers     int
	writeRate    int
	watchWriters int

	applyClients        int
	patchClients        int
	idleWatchers        int
	bulkObjects         int
	pageLimit           int
	pagedLists          int
	compactionRows      int
	compactionPayload   int
	compactionWriteRate int
	backupObjects       int

	// kubeconfig is the daemon's kubeconfig for the TLS workloads
	// (--kubeconfig; default: the one the started daemon writes).
	kubeconfig       string
	tlsRounds        int
	tlsCreateClients int
	// tlsRBACBindings, when positive, makes the TLS workloads a token
	// user whose rights come from RBAC, among that many RoleBindings.
	tlsRBACBindings  int
	tlsWatchSizes    []watchSize
	handshakeClients int
	// client is --client: plain, or clientgo to run the core workloads
	// a second time as client-go connects (clientgo.go).
	client string
	// idleWatchConns is the number of client-go transports the idle
	// watches of --client clientgo spread over.
	idleWatchConns int
	// clientgoClientset adds create and get runs through client-go's
	// typed clientset to the client-go pass.
	clientgoClientset bool
	// metricsRounds is the rounds of the metrics workload.
	metricsRounds int

	// informerObjects is the informer workload's ConfigMaps.
	informerObjects int

	// ca and token reach an https --server (see kuberef.go); storePid is
	// the pid of the store process beside it (etcd), whose CPU and RSS
	// are added to the daemon's.
	ca, token string
	storePid  int
	// mainTLS runs the workloads over the started daemon's HTTPS
	// listener with a system:masters token, as against kube-apiserver.
	mainTLS bool
	// kubeRef also runs the workloads against kube-apiserver on etcd,
	// started with the kubeRefStart script.
	kubeRef      bool
	kubeRefStart string
	// edgeOnEtcd, with kubeRef, also runs the workloads against haBin
	// (edgeapi built with the etcd backend) on the reference's etcd, under
	// etcdPrefix (see edgeetcd.go).
	edgeOnEtcd bool
	haBin      string
	etcdPrefix string
	// serverNote is added to the report's server line of a daemon this
	// tool starts (which backend it runs on).
	serverNote string

	jsonPath   string
	commit     string
	quiet      bool
	cpuProfile string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(fakeServeMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == idleRefSubcommand {
		os.Exit(idleRefServeMain(os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./scripts/bench [flags]\n\nworkloads:\n")
		for _, w := range workloads {
			def := ""
			if w.byDefault {
				def = " (default)"
			}
			fmt.Fprintf(fs.Output(), "  %-12s %s%s\n", w.name, w.desc, def)
		}
		fmt.Fprintf(fs.Output(), "\nflags:\n")
		fs.PrintDefaults()
	}
	var defaults []string
	for _, w := range workloads {
		if w.byDefault {
			defaults = append(defaults, w.name)
		}
	}
	wl := fs.String("workloads", strings.Join(defaults, ","), "comma-separated workloads to run, in order")
	big := fs.Bool("big", false, "also run the big workload (100k objects: RSS and restart time)")
	fs.StringVar(&cfg.server, "server", "", "URL of a running daemon (http://127.0.0.1:PORT); default: start --bin")
	fs.StringVar(&cfg.bin, "bin", "bin/edgeapi", "edgeapi binary to start as `serve --data-dir TMP --insecure-listen 127.0.0.1:PORT`")
	fs.IntVar(&cfg.pid, "pid", 0, "with --server: the daemon's pid, for RSS and CPU")
	fs.StringVar(&cfg.ca, "ca", "", "with an https --server: the CA `file` of its serving certificate (the workloads then use TLS, HTTP/1.1)")
	fs.StringVar(&cfg.token, "token", "", "with an https --server: the bearer token the workloads send")
	fs.IntVar(&cfg.storePid, "store-pid", 0, "the pid of a store process beside the daemon (etcd), whose CPU and RSS are added to the daemon's (--pid's with --server, or the one this tool starts)")
	fs.BoolVar(&cfg.kubeRef, "kube-ref", false, "after the workloads against edgeapi, run them against kube-apiserver on etcd (scripts/kube-ref-build first), started and stopped with --kube-ref-start, and print both and their ratios; implies --main-tls unless --main-tls=false")
	fs.StringVar(&cfg.kubeRefStart, "kube-ref-start", "scripts/kube-ref-start", "with --kube-ref: the script that starts the reference and prints its URL, token, CA and pids")
	fs.BoolVar(&cfg.edgeOnEtcd, "edge-on-etcd", false, "with --kube-ref: also run the workloads against --ha-bin (edgeapi built with -tags etcd) on the reference's own etcd, under --etcd-prefix, while kube-apiserver idles beside it; the prefix is wiped (deleted, compacted, defragmented) before kube-apiserver's half; prints a three-way table (edgeapi on etcd against kube-apiserver and against edgeapi on SQLite)")
	fs.StringVar(&cfg.haBin, "ha-bin", "bin/edgeapi-ha", "with --edge-on-etcd: the edgeapi binary with the etcd backend (go build -tags etcd -o bin/edgeapi-ha ./daemon)")
	fs.StringVar(&cfg.etcdPrefix, "etcd-prefix", defaultBenchEtcdPrefix, "with --edge-on-etcd: edgeapi's --etcd-prefix on the shared etcd (not kube-apiserver's /registry)")
	mainTLS := fs.String("main-tls", "", "true: run the workloads over the started daemon's HTTPS listener (TLS, HTTP/1.1) with a system:masters token, as against kube-apiserver; false: over --insecure-listen (default: true with --kube-ref, else false)")
	fs.IntVar(&cfg.informerObjects, "informer-objects", 100_000, "informer workload: ConfigMaps in its namespace when the informer starts")
	fs.DurationVar(&cfg.readyTimeout, "ready-timeout", DefaultReadyTimeout, "how long a started daemon gets to answer /readyz 200")
	daemonArgs := fs.String("daemon-args", "", "extra space-separated serve arguments for the main daemon this tool starts (not the big or compaction ones) (e.g. \"--debug-pprof 127.0.0.1:6060\")")
	fs.Float64Var(&cfg.memoryLimitMiB, "memory-limit-mib", DefaultMemoryLimitMiB, "the daemon's --memory-limit in MiB, for the peak-RSS check of each workload (taken from --daemon-args when it has --memory-limit; 0: no check)")
	fs.Float64Var(&cfg.rssMarginMiB, "rss-margin-mib", DefaultRSSMarginMiB, "MiB of RSS the daemon may use beyond --memory-limit in the peak-RSS check (0: the budget counts the binary's pages and SQLite's caches, so the limit itself; see README)")
	fs.BoolVar(&cfg.keepData, "keep-data", false, "keep the temporary data dirs and daemon logs")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "duration of each timed workload")
	fs.Int64Var(&cfg.maxOps, "max-ops", 5_000_000, "upper bound on operations per timed workload")
	fs.IntVar(&cfg.payloadBytes, "payload", 1024, "bytes of data per ConfigMap")
	cc := fs.String("create-clients", "1,16,64", "concurrency levels of the create workload")
	fs.IntVar(&cfg.getClients, "get-clients", 16, "clients of the get workload")
	fs.IntVar(&cfg.getObjects, "get-objects", 1000, "objects the get workload reads from")
	fs.IntVar(&cfg.rmwClients, "rmw-clients", 16, "clients of the rmw workload, each on its own object")
	fs.IntVar(&cfg.listObjects, "list-objects", 10000, "objects in the listed namespace")
	fs.IntVar(&cfg.crds, "crds", 700, "crds workload: CustomResourceDefinitions posted at once")
	fs.IntVar(&cfg.crdFields, "crd-fields", 76, "crds workload: spec fields of each CRD's schema (76: a CRD of about 20 KB, as issue 10 asks)")
	fs.IntVar(&cfg.lists, "lists", 20, "sequential full LISTs to time")
	fs.IntVar(&cfg.coldLists, "cold-lists", 7, "cr-list workload: daemon restarts, each followed by one cold LIST of each kind")
	fs.DurationVar(&cfg.settle, "settle", 2*time.Second, "idle time before reading RSS after start-up")
	fs.IntVar(&cfg.bigObjects, "big-objects", 100_000, "objects stored by the big workload")
	fs.DurationVar(&cfg.bigIdle, "big-idle", 5*time.Second, "idle time before reading RSS with big-objects stored")
	fs.DurationVar(&cfg.bigTimeout, "big-timeout", 15*time.Minute, "upper bound on the big workload")
	fs.IntVar(&cfg.watchers, "watchers", 1000, "watch workload: concurrent watches on one namespace")
	fs.IntVar(&cfg.writeRate, "write-rate", 1000, "watch workload: creates per second")
	fs.IntVar(&cfg.watchWriters, "watch-writers", 32, "watch workload: writer goroutines sharing --write-rate")
	fs.IntVar(&cfg.applyClients, "apply-clients", 16, "apply workload: concurrent field managers, each on its own object")
	fs.IntVar(&cfg.patchClients, "patch-clients", 16, "patch workload: clients, each on its own object")
	fs.IntVar(&cfg.idleWatchers, "idle-watchers", 10000, "watch-idle workload: idle watches held open")
	fs.IntVar(&cfg.bulkObjects, "bulk-objects", 100_000, "watch-resume and paged-list: objects created in their shared namespace")
	fs.IntVar(&cfg.pageLimit, "page-limit", 500, "paged-list workload: limit per page")
	fs.IntVar(&cfg.pagedLists, "paged-lists", 3, "paged-list workload: sequential paged lists to time")
	fs.IntVar(&cfg.compactionRows, "compaction-rows", 1_000_000, "compaction workload: change-log rows to compact")
	fs.IntVar(&cfg.compactionPayload, "compaction-payload", 64, "compaction workload: bytes of data per ConfigMap of the fill")
	fs.IntVar(&cfg.compactionWriteRate, "compaction-write-rate", 1000, "compaction workload: creates per second during the compaction")
	fs.IntVar(&cfg.backupObjects, "backup-objects", 100_000, "backup workload: ConfigMaps stored when the backups, check and restore run")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "TLS workloads: the daemon's kubeconfig (HTTPS server, CA, client certificate); default: the one the daemon this tool starts writes")
	fs.IntVar(&cfg.tlsRBACBindings, "tls-rbac-bindings", 1000, "TLS workloads: when positive, reach the HTTPS side as a token user (--token-auth-file) whose rights come from one of this many RoleBindings across 100 namespaces, instead of the kubeconfig's system:masters certificate (0: the certificate)")
	fs.IntVar(&cfg.tlsRounds, "tls-rounds", 2, "tls workload: rounds of plain, TLS HTTP/1.1 and client-go HTTP/2 runs, in alternating order")
	fs.IntVar(&cfg.metricsRounds, "metrics-rounds", 4, "metrics workload: rounds of gets with metrics off and on, in alternating order")
	fs.IntVar(&cfg.tlsCreateClients, "tls-create-clients", 64, "tls workload: clients of the create runs (the get runs use --get-clients)")
	tws := fs.String("tls-watch-sizes", "100x500,1000x1000", "tls-watch workload: comma-separated WATCHERSxWRITES_PER_SECOND fan-outs")
	fs.IntVar(&cfg.handshakeClients, "handshake-clients", 8, "tls-handshake workload: clients each making new connections back to back")
	fs.StringVar(&cfg.client, "client", clientPlain, "plain: the workloads talk HTTP/1.1 JSON to --insecure-listen as system:masters; clientgo: create, get, rmw, list, apply, patch, paged-list, watch and watch-idle also run a second time, as client-go connects (its own transport: HTTPS, HTTP/2, the token user of --tls-rbac-bindings; Protobuf where typed clients ask for it), each figure beside the plain one with the ratio")
	fs.IntVar(&cfg.idleWatchConns, "idle-watch-conns", 1, "watch-idle with --client clientgo: client-go transports (as separate client-go programs) the idle watches spread over; each opens another HTTP/2 connection when the daemon's streams per connection are used up")
	fs.BoolVar(&cfg.clientgoClientset, "clientgo-clientset", false, "with --client clientgo: create and get also run through client-go's typed clientset, to compare the load generator's CPU per op with the bench's own requests")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&cfg.commit, "commit", "", "daemon commit to report (default: the one `bin version` prints, else git HEAD of the binary's repo)")
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress lines on stderr")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write the load generator's own CPU profile to this file")
	err := fs.Parse(args)
	if err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.daemonArgs = strings.Fields(*daemonArgs)
	switch *mainTLS {
	case "":
		cfg.mainTLS = cfg.kubeRef
	case "true", "false":
		cfg.mainTLS = *mainTLS == "true"
	default:
		return cfg, fmt.Errorf("bad --main-tls %q: true or false", *mainTLS)
	}
	if cfg.kubeRef && cfg.server != "" {
		return cfg, errors.New("--kube-ref starts its own daemon and reference: drop --server")
	}
	if cfg.edgeOnEtcd && !cfg.kubeRef {
		return cfg, errors.New("--edge-on-etcd runs on kube-apiserver's etcd: add --kube-ref")
	}
	if cfg.edgeOnEtcd {
		if err := checkEtcdPrefix(cfg.etcdPrefix); err != nil {
			return cfg, err
		}
	}
	if cfg.kubeRef && cfg.kubeconfig != "" {
		// The reference pass would reach edgeapi through it.
		return cfg, errors.New("--kube-ref reaches each server's HTTPS side itself: drop --kubeconfig")
	}
	if cfg.server != "" && strings.HasPrefix(cfg.server, "https://") && cfg.ca == "" {
		return cfg, errors.New("an https --server needs --ca")
	}
	if mib, ok, err := memoryLimitFromArgs(cfg.daemonArgs); err != nil {
		return cfg, err
	} else if ok {
		cfg.memoryLimitMiB = mib
	}
	if cfg.client, err = parseClient(cfg.client); err != nil {
		return cfg, err
	}
	if cfg.idleWatchConns < 1 {
		return cfg, errors.New("--idle-watch-conns must be positive")
	}
	if cfg.tlsWatchSizes, err = parseWatchSizes(*tws); err != nil {
		return cfg, err
	}
	if cfg.tlsRounds < 1 || cfg.tlsCreateClients < 1 || cfg.handshakeClients < 1 || cfg.metricsRounds < 1 {
		return cfg, errors.New("--tls-rounds, --tls-create-clients, --handshake-clients and --metrics-rounds must be positive")
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(*wl, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		if _, ok := findWorkload(name); !ok {
			return cfg, fmt.Errorf("unknown workload %q (see -help)", name)
		}
		seen[name] = true
		cfg.workloads = append(cfg.workloads, name)
	}
	if *big && !seen["big"] {
		cfg.workloads = append(cfg.workloads, "big")
	}
	for _, s := range strings.Split(*cc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("bad --create-clients %q", *cc)
		}
		cfg.createClients = append(cfg.createClients, n)
	}
	if cfg.getClients < 1 || cfg.rmwClients < 1 || cfg.getObjects < 1 || cfg.listObjects < 1 ||
		cfg.lists < 1 || cfg.coldLists < 1 || cfg.watchers < 1 || cfg.writeRate < 1 || cfg.watchWriters < 1 || cfg.bigObjects < 1 ||
		cfg.applyClients < 1 || cfg.patchClients < 1 || cfg.idleWatchers < 1 || cfg.bulkObjects < 1 ||
		cfg.pageLimit < 1 || cfg.pagedLists < 1 || cfg.compactionRows < 1 || cfg.compactionPayload < 0 ||
		cfg.compactionWriteRate < 1 || cfg.backupObjects < 1 || cfg.informerObjects < 1 {
		return cfg, errors.New("counts and rates must be positive")
	}
	if cfg.duration <= 0 || cfg.maxOps < 1 {
		return cfg, errors.New("--duration and --max-ops must be positive")
	}
	return cfg, nil
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	b := newBench(cfg)
	err = b.run(ctx)
	if !cfg.kubeRef {
		return err
	}
	if ctx.Err() != nil {
		return err
	}
	if cfg.edgeOnEtcd {
		return errors.Join(err, runEdgeOnEtcd(ctx, cfg, b.report))
	}
	kube, kerr := runKubeRef(ctx, cfg)
	if kube == nil {
		return errors.Join(err, kerr)
	}
	if kerr != nil {
		kube.Failures = append(kube.Failures, "kube-ref: "+kerr.Error())
	}
	printReport(os.Stdout, kube)
	if cfg.jsonPath != "" {
		if werr := writeJSON(kubeRefJSONPath(cfg.jsonPath), kube); werr != nil {
			kerr = errors.Join(kerr, fmt.Errorf("write json: %w", werr))
		}
	}
	printComparison(os.Stdout, b.report, kube)
	if kerr == nil && len(kube.Failures) > 0 {
		kerr = fmt.Errorf("kube-ref: %d workload(s) failed", len(kube.Failures))
	}
	return errors.Join(err, kerr)
}

// newBench returns the state of one run with cfg, its report started.
func newBench(cfg config) *bench {
	return &bench{
		cfg:   cfg,
		runID: fmt.Sprintf("%06x", rand.Uint32()&0xffffff),
		report: &Report{
			Started:   time.Now().Format(time.RFC3339),
			GoVersion: runtime.Version(),
			NumCPU:    runtime.NumCPU(),
			Config: map[string]any{
				"workloads": cfg.workloads, "duration": cfg.duration.String(),
				"payload_bytes": cfg.payloadBytes, "create_clients": cfg.createClients,
				"get_clients": cfg.getClients, "get_objects": cfg.getObjects,
				"rmw_clients": cfg.rmwClients, "list_objects": cfg.listObjects, "lists": cfg.lists, "cold_lists": cfg.coldLists,
				"big_objects": cfg.bigObjects, "watchers": cfg.watchers, "write_rate": cfg.writeRate,
				"apply_clients": cfg.applyClients, "patch_clients": cfg.patchClients,
				"idle_watchers": cfg.idleWatchers, "bulk_objects": cfg.bulkObjects, "page_limit": cfg.pageLimit,
				"compaction_rows": cfg.compactionRows, "compaction_write_rate": cfg.compactionWriteRate,
				"daemon_args": cfg.daemonArgs, "memory_limit_mib": cfg.memoryLimitMiB, "rss_margin_mib": cfg.rssMarginMiB, "tls_rounds": cfg.tlsRounds, "tls_create_clients": cfg.tlsCreateClients,
				"tls_watch_sizes": cfg.tlsWatchSizes, "handshake_clients": cfg.handshakeClients,
				"client": cfg.client, "idle_watch_conns": cfg.idleWatchConns, "tls_rbac_bindings": cfg.tlsRBACBindings,
				"informer_objects": cfg.informerObjects, "main_tls": cfg.mainTLS,
				"edge_on_etcd": cfg.edgeOnEtcd, "etcd_prefix": cfg.etcdPrefix, "server_note": cfg.serverNote,
			},
		},
	}
}

// run runs the workloads against --server or a daemon it starts, prints
// the report and writes its JSON.
func (b *bench) run(ctx context.Context) error {
	cfg, report := b.cfg, b.report
	report.LoadAvg = append(report.LoadAvg, loadAvg())

	repoDir, _ := os.Getwd()
	if cfg.server != "" {
		b.base = strings.TrimRight(cfg.server, "/")
		b.pid = cfg.pid
		b.storePid = cfg.storePid
		if cfg.ca != "" {
			b.serverTLS = &serverTLS{caFile: cfg.ca, token: cfg.token}
		}
		report.Server = b.base
	} else {
		bin, err := filepath.Abs(cfg.bin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("daemon binary: %w (build it with scripts/build, or use --server)", err)
		}
		b.cfg.bin = bin
		report.Bin = bin
		repoDir = filepath.Dir(bin)
		report.Version, report.Commit = daemonVersion(ctx, bin)

		b.tmpDir, err = os.MkdirTemp("", "edgeapi-bench-")
		if err != nil {
			return err
		}
		if !cfg.keepData {
			defer os.RemoveAll(b.tmpDir)
		} else {
			defer b.logf("data and logs kept in %s", b.tmpDir)
		}
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		args := withoutWatchBounds(cfg.daemonArgs)
		if cfg.tlsRBACBindings > 0 || cfg.mainTLS {
			tokens := filepath.Join(b.tmpDir, "tokens.csv")
			if err := os.WriteFile(tokens, []byte(tokenFile), 0o600); err != nil {
				return err
			}
			args = append(args[:len(args):len(args)], "--token-auth-file", tokens)
		}
		d, startup, err := startDaemon(ctx, bin, filepath.Join(b.tmpDir, "data"), addr, cfg.readyTimeout, args...)
		if err != nil {
			return err
		}
		b.d, b.pid, b.base = d, d.pid(), "http://"+addr
		// A store process beside the started daemon (etcd, with
		// --edge-on-etcd) counts with it, as with --server.
		b.storePid = cfg.storePid
		report.Server = b.base
		if cfg.mainTLS {
			if err := b.useMainTLS(); err != nil {
				_ = d.stop()
				return err
			}
			report.Server = b.base + " (HTTPS, HTTP/1.1, a system:masters token)"
		}
		if cfg.serverNote != "" {
			report.Server += " " + cfg.serverNote
		}
		stopped := false
		stopDaemon := func() {
			if stopped {
				return
			}
			stopped = true
			t := time.Now()
			err := b.d.stop()
			r := Result{Workload: "shutdown", Value: time.Since(t).Seconds(), Unit: "s"}
			r.note("SIGTERM to exit after the run")
			if err != nil {
				r.note("%v", err)
				report.Failures = append(report.Failures, "shutdown: "+err.Error())
			}
			report.Results = append(report.Results, r)
			b.logResult(r)
		}
		defer stopDaemon()

		r := Result{Workload: "startup", Value: startup.Seconds(), Unit: "s"}
		r.note("process start to /readyz 200, empty data dir")
		report.Results = append(report.Results, r)
		b.logf("daemon pid %d on %s, data %s", b.pid, addr, d.dataDir)
		b.logResult(r)

		// Stop the daemon first, so that its shutdown is in the report.
		err = b.runWorkloads(ctx)
		stopDaemon()
		return b.finish(repoDir, err)
	}
	return b.finish(repoDir, b.runWorkloads(ctx))
}

func (b *bench) runWorkloads(ctx context.Context) error {
	maxConns := 64
	for _, n := range b.cfg.createClients {
		maxConns = max(maxConns, n)
	}
	maxConns = max(maxConns, b.cfg.getClients, b.cfg.rmwClients, b.cfg.watchWriters, b.cfg.applyClients, b.cfg.patchClients, b.cfg.tlsCreateClients)
	c, err := newServerClient(b.base, b.serverTLS, maxConns)
	if err != nil {
		return err
	}
	b.c = c
	defer b.c.close()

	if b.pid > 0 {
		settle(ctx, b.cfg.settle)
		if r, ok := b.rssResult("rss-idle"); ok {
			r.Target = targetRSSIdle
			if b.d != nil {
				r.note("%s after start-up", b.cfg.settle)
			} else {
				r.note("at start of run (--pid)")
			}
			b.report.Results = append(b.report.Results, r)
			b.logResult(r)
		}
	}
	b.report.ServerStats = b.c.probeStats(ctx)

	for _, name := range b.cfg.workloads {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w, _ := findWorkload(name)
		b.logf("== %s", name)
		run := b.runWithRSSPeak
		if b.cfg.client == clientGo && clientGoWorkloads[name] {
			run = b.runBothWires
		}
		res, err := run(ctx, w)
		b.report.Results = append(b.report.Results, res...)
		if err != nil {
			b.report.Failures = append(b.report.Failures, name+": "+err.Error())
			b.logf("%s failed: %v", name, err)
		}
	}
	if b.pid > 0 {
		if r, ok := b.rssResult("rss-end"); ok {
			r.note("after the last workload")
			b.report.Results = append(b.report.Results, r)
			b.logResult(r)
		}
	}
	return ctx.Err()
}

// finish prints the report and writes the JSON file.
func (b *bench) finish(repoDir string, runErr error) error {
	r := b.report
	r.LoadAvg = append(r.LoadAvg, loadAvg())
	switch {
	case b.cfg.commit != "":
		r.Commit = b.cfg.commit
	case r.Commit != "":
		// Stamped in the binary by scripts/build.
	default:
		r.Commit = gitCommit(repoDir)
		if r.Commit != "" {
			r.Commit += " (HEAD of " + repoDir + ")"
		}
	}
	r.Results = append(r.Results, watchRefRatios(r.Results)...)
	printReport(os.Stdout, r)
	if b.cfg.jsonPath != "" {
		if err := writeJSON(b.cfg.jsonPath, r); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		b.logf("wrote %s", b.cfg.jsonPath)
	}
	if runErr != nil {
		return runErr
	}
	if len(r.Failures) > 0 {
		return fmt.Errorf("%d workload(s) failed", len(r.Failures))
	}
	return nil
}

// gitCommit returns HEAD of the repository holding dir, with "+dirty" when
// tracked files outside scripts/bench differ, or "" outside a repository.
func gitCommit(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(exclude,top)scripts/bench").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "+dirty"
	}
	return commit
}

// daemonVersion runs `bin version` and returns its output on one line
// ("" on failure) and the commit stamped in it by scripts/build ("" when
// absent or "unknown").
func daemonVersion(ctx context.Context, bin string) (version, commit string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
		if k, v, ok := strings.Cut(lines[i], ":"); ok && strings.Contains(strings.ToLower(k), "commit") {
			if v = strings.TrimSpace(v); v != "unknown" && v != "" {
				commit = v
			}
		}
	}
	version = strings.Join(lines, "; ")
	if len(version) > 200 {
		version = version[:200]
	}
	return version, commit
}
