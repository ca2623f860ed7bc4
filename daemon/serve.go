package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/controller"
	"github.com/edgeapi/edgeapi/encryption"
	"github.com/edgeapi/edgeapi/httpapi"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// shutdownTimeout bounds the graceful part of shutdown. A var so that tests
// can shorten it.
var shutdownTimeout = DefaultShutdownTimeout

func runServe(ctx context.Context, args []string) error {
	cfg, err := parseServeConfig(args, os.Stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat, os.Stderr)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // stderr may not support sync
	return serve(ctx, cfg, log)
}

// serve runs the daemon until ctx is cancelled, then shuts it down
// gracefully. It returns nil after a clean shutdown.
func serve(ctx context.Context, cfg serveConfig, log *zap.Logger) error {
	cfg.budget = budgetFor(int64(cfg.MemoryLimit), measureBinaryPages(log))
	setMemoryLimit(cfg.budget, log)
	d, err := startDaemon(ctx, cfg, log)
	if err != nil {
		return err
	}
	return d.run(ctx)
}

// daemon is one running `edgeapi serve`: the store, the API server and the
// HTTP server over one listener.
type daemon struct {
	// metrics are served at metricsPath.
	metrics        *daemonMetrics
	cfg            serveConfig
	log            *zap.Logger
	started        time.Time
	kubeconfigPath string

	unlock func()
	db     backend
	api    *httpapi.Server
	ctrl   *controller.Manager
	ln     net.Listener // HTTPS
	tls    *servingTLS
	auth   *daemonAuth
	// audit writes the audit log (--audit-log-path); nil without it.
	audit *audit.Logger
	// saTokens issues ServiceAccount tokens (serviceaccounts/token) and
	// authenticates them (saTokens.auth, for authn.Config.ExtraTokens).
	saTokens *serviceAccountTokens
	// insecureLn serves plain HTTP (--insecure-listen); nil without it.
	insecureLn net.Listener
	// unixLn serves the --unix-socket; nil without it.
	unixLn *net.UnixListener
	// h2 runs short HTTP/2 requests on goroutines with grown stacks.
	h2  *h2Workers
	srv *http.Server
}

// startDaemon prepares everything that must work before the daemon reports
// ready: the data directory, the store, the API, the bound listener and the
// kubeconfig. It doesn't serve yet. On error it releases what it opened.
func startDaemon(ctx context.Context, cfg serveConfig, log *zap.Logger) (_ *daemon, err error) {
	d := &daemon{cfg: cfg, log: log, started: time.Now()}
	defer func() {
		if err != nil {
			d.closeOpened()
		}
	}()

	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	d.cfg.DataDir = dataDir
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	warnOpenDataDir(dataDir, log)
	if d.unlock, err = lockDataDir(dataDir); err != nil {
		return nil, err
	}
	removeBackupScratch(dataDir, log)

	// Open reads only the schema version and the revision counters, so
	// start-up time doesn't grow with the number of objects.
	if cfg.UnsafeTestingSynchronousOff {
		log.Warn("UNSAFE: --unsafe-testing-synchronous-off runs SQLite with synchronous=OFF; " +
			"acknowledged writes WILL BE LOST on power loss; for testing only, never in production")
	}
	var transformers func(string) store.Transformer
	if cfg.EncryptionProviderConfig != "" {
		enc, err := encryption.Load(cfg.EncryptionProviderConfig)
		if err != nil {
			return nil, fmt.Errorf("load encryption provider config: %w", err)
		}
		transformers = enc.Transformers()
		log.Info("encrypting stored values", zap.String("resources", enc.Resources()))
	}
	// Before the store, which records into them from Open on.
	if d.metrics, err = newDaemonMetrics(d.storeStats, os.Getenv(disableMetricsEnv) == ""); err != nil {
		return nil, err
	}
	// The etcd backend names each value's kind from the registry, made
	// once the store exists (its Service allocators may claim in it) and
	// before anything is written.
	var reg *registry.Registry
	d.db, err = d.openBackend(ctx, transformers, func() *registry.Registry { return reg })
	if err != nil {
		return nil, err // already "open store <path>: ..."
	}

	// Sockets systemd passed (edgeapi.socket) stand in for the flags'
	// addresses; see takePassedListeners.
	passed, err := takePassedListeners()
	if err != nil {
		return nil, err
	}
	d.ln, d.insecureLn, d.unixLn = passed.listen, passed.insecureListen, passed.unixSocket
	if d.unixLn != nil {
		cfg.UnixSocket = unixSocketPath(d.unixLn)
		d.cfg.UnixSocket = cfg.UnixSocket
	}
	for _, ln := range []net.Listener{d.ln, d.insecureLn} {
		if ln != nil {
			log.Info("serving on a socket passed by systemd", zap.String("addr", ln.Addr().String()))
		}
	}
	if d.unixLn != nil {
		log.Info("serving on a unix socket passed by systemd", zap.String("path", cfg.UnixSocket))
	}

	// Bind before building the kubeconfig: with port 0 the address is
	// known only now.
	if d.ln == nil {
		if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
	}
	addr := clientAddress(d.ln.Addr())
	if d.tls, err = setupTLS(cfg, dataDir, d.ln.Addr(), log); err != nil {
		return nil, err
	}
	if d.saTokens, err = setupServiceAccountTokens(cfg, dataDir, addr, d.db, log); err != nil {
		return nil, err
	}
	if d.auth, err = setupAuth(cfg, d.tls, d.saTokens.auth, log); err != nil {
		return nil, err
	}
	if d.audit, err = setupAudit(cfg, log.Named("audit")); err != nil {
		return nil, err
	}
	if cfg.InsecureListen != "" && d.insecureLn == nil {
		if d.insecureLn, err = net.Listen("tcp", cfg.InsecureListen); err != nil {
			return nil, fmt.Errorf("listen insecure: %w", err)
		}
	}
	if cfg.UnixSocket != "" && d.unixLn == nil {
		if d.unixLn, err = listenUnix(cfg.UnixSocket); err != nil {
			return nil, err
		}
	}

	builtinOpts := registry.BuiltinOptions{
		ServiceClusterIPRange: cfg.ServiceClusterIPRange,
		ServiceNodePortRange:  cfg.ServiceNodePortRange,
	}
	if cfg.StorageBackend == backendEtcd3 {
		// Replicas may share the store: allocated values are claimed in it.
		builtinOpts.Claims = d.db
	}
	reg = registry.Builtin(builtinOpts)
	kubeSvc, err := kubernetesService(builtinOpts, d.ln.Addr())
	if err != nil {
		return nil, err
	}

	d.api, err = httpapi.New(httpapi.Config{
		Store:               d.db,
		Registry:            reg,
		KubernetesService:   kubeSvc,
		Logger:              log.Named("http"),
		MaxRequestBodyBytes: int64(cfg.MaxRequestBody),
		ServerAddress:       addr,
		RequestTimeout:      time.Duration(cfg.RequestTimeout),
		ResponseCompression: compressionModes[cfg.ResponseCompression],
		IdleTimeout:         DefaultIdleTimeout,
		Tokens:              d.saTokens.issuer,
		Authorizer:          d.auth.authorizer,
		RuleResolver:        d.auth.ruleResolver,
		AdmitWrite:          d.auth.admitWrite(),
		AdmitWatch:          d.admitWatch(),
		Extra:               d.extraHandlers(),
		Metrics:             d.metrics.requests,
		WatchCache:          store.WatchCacheConfig{MaxEvents: cfg.budget.WatchCacheEvents, MaxBytes: cfg.budget.WatchCacheBytes},
		ServedCacheBytes:    cfg.budget.ServedCacheBytes,
		ListBufferBytes:     cfg.budget.ListBufferBytes,
		ListMemoryBytes:     cfg.budget.ListMemoryBytes,
		BodyMemoryBytes:     cfg.budget.BodyMemoryBytes,
		UpdateCacheBytes:    cfg.budget.UpdateCacheBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("create api server: %w", err)
	}

	creds := kubeconfigCredentials{
		CA:   d.tls.bundle.CACert,
		Cert: d.tls.bundle.AdminCert,
		Key:  d.tls.bundle.AdminKey,
	}
	if d.tls.customCert {
		// The served certificate's CA is not known here: clients use
		// their system roots.
		creds.CA = nil
	}
	kc, err := kubeconfig("https://"+addr, creds)
	if err != nil {
		return nil, err
	}
	d.kubeconfigPath = filepath.Join(dataDir, kubeconfigFileName)
	if err := writeKubeconfigFile(d.kubeconfigPath, kc); errors.Is(err, errKubeconfigNoSpace) {
		d.log.Error("starting without writing the kubeconfig: the disk is full", zap.String("path", d.kubeconfigPath), zap.Error(err))
	} else if err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	insecurePath := filepath.Join(dataDir, insecureKubeconfigFileName)
	if d.insecureLn != nil {
		kc, err := kubeconfig("http://"+clientAddress(d.insecureLn.Addr()), kubeconfigCredentials{})
		if err != nil {
			return nil, err
		}
		if err := writeKubeconfigFile(insecurePath, kc); errors.Is(err, errKubeconfigNoSpace) {
			d.log.Error("starting without writing the insecure kubeconfig: the disk is full", zap.String("path", insecurePath), zap.Error(err))
		} else if err != nil {
			return nil, fmt.Errorf("write insecure kubeconfig: %w", err)
		}
	} else if err := os.Remove(insecurePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale insecure kubeconfig: %w", err)
	}

	// The API and the controllers must outlive the signal that cancels
	// ctx: Close stops them, in order, during shutdown.
	if err := d.api.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start api server: %w", err)
	}
	election, err := leaderElection(d.cfg)
	if err != nil {
		return nil, err
	}
	d.ctrl = controller.New(controller.Config{
		Store:      d.db,
		Registry:   reg,
		Objects:    d.api,
		WatchCache: d.api.WatchCache(),
		EventTTL:   time.Duration(cfg.EventTTL),
		Logger:     log.Named("controller"),
		// Custom resources are served from their CRDs.
		CustomResourceKinds: registry.CustomResourceKinds,
		RBAC:                d.auth.rbac,
		LeaderElection:      election,
	})
	if err := d.ctrl.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start controllers: %w", err)
	}
	if err := d.metrics.registry.Register(d.ctrl); err != nil {
		return nil, fmt.Errorf("register controller metrics: %w", err)
	}
	d.metrics.collector.revisionsOnly = d.cfg.StorageBackend != backendSQLite
	if c, ok := d.db.(store.ObjectCounter); ok {
		d.metrics.collector.objectCounts = c.ObjectCounts
	}
	d.metrics.collector.watchCache = d.api.WatchCache().Metrics
	d.metrics.collector.gcDepth = d.ctrl.GCQueueDepth
	// As kube-apiserver's crd-informer-synced hook: not ready until the
	// custom resources of every stored CRD are served.
	d.api.AddReadyCheck("poststarthook/crd-informer-synced", d.ctrl.CRDsServed)
	if p, ok := d.db.(store.Prober); ok && cfg.StorageBackend == backendEtcd3 {
		// As kube-apiserver's etcd check: /readyz and /healthz fail
		// while etcd does not answer a quorum read.
		d.api.AddReadyCheck("etcd", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
			defer cancel()
			return p.Alive(ctx) == nil
		})
	}
	if d.auth.rbac != nil {
		// As kube-apiserver's rbac/bootstrap-roles hook; and until the
		// RBAC index holds the stored bindings, users would be refused.
		d.api.AddReadyCheck("poststarthook/rbac/bootstrap-roles", d.ctrl.RBACBootstrapped)
		d.api.AddReadyCheck("informer-sync-rbac", d.ctrl.RBACSynced)
	}

	d.h2 = newH2Workers(d.authenticated(d.api.Handler()))
	d.srv = &http.Server{
		Handler:           d.h2,
		ConnContext:       d.connContext,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		// No ReadTimeout or WriteTimeout: watches stream for minutes, and
		// a ReadTimeout would end them. The API bounds request bodies by
		// --request-timeout instead, and watch writes by a deadline of
		// their own.
		ErrorLog:  newHTTPErrorLog(log.Named("http")),
		TLSConfig: d.tls.config,
		// client-go opens one HTTP/2 connection per host and runs every
		// watch of an informer factory on it as a stream.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: DefaultHTTP2MaxStreams},
	}
	return d, nil
}

// run serves until ctx is cancelled or the HTTP server fails, then shuts
// down. It reports READY=1 to systemd (a no-op outside systemd) and,
// under a unit with WatchdogSec=, pings the watchdog while the store's
// writer and the HTTP server pass their liveness probes (see watchdog).
func (d *daemon) run(ctx context.Context) error {
	serveErr := make(chan error, 1)
	d.h2.start()
	defer d.h2.stop()
	go func() { serveErr <- d.srv.ServeTLS(d.ln, "", "") }()
	if d.insecureLn != nil {
		go func() {
			if err := d.srv.Serve(d.insecureLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("serve insecure listener", zap.Error(err))
			}
		}()
	}
	if d.unixLn != nil {
		go func() {
			if err := d.srv.Serve(d.unixLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("serve unix socket", zap.Error(err))
			}
		}()
	}
	// The connections of finished watches come back to the same server
	// for their next request (see httpapi.Server.HandoffListener).
	handoffDone := make(chan struct{})
	defer func() { <-handoffDone }()
	go func() {
		defer close(handoffDone)
		if err := d.srv.Serve(d.api.HandoffListener()); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Warn("serve handed-back watch connections", zap.Error(err))
		}
	}()

	if d.cfg.DebugPprof != "" {
		stopPprof, err := startPprof(d.cfg.DebugPprof, d.log.Named("pprof"))
		if err != nil {
			d.log.Warn("debug-pprof not served", zap.Error(err))
		} else {
			defer stopPprof()
		}
	}

	// The compactor runs until shutdown begins; it stops before the store
	// closes.
	compactCtx, stopCompactor := context.WithCancel(context.Background())
	compactorDone := make(chan struct{})
	go func() {
		defer close(compactorDone)
		d.db.RunCompactor(compactCtx, d.cfg.compactionInterval())
	}()

	// Ready, for systemd, when /readyz is: once the custom resources of
	// the stored CRDs are served (the controller's first round, a few
	// milliseconds after start), or at once if shutdown began.
	select {
	case <-d.ctrl.CRDsServedCh():
	case <-ctx.Done():
	}
	if d.auth.rbac != nil {
		select {
		case <-d.ctrl.RBACReadyCh():
		case <-ctx.Done():
		}
	}
	d.notify(sddaemon.SdNotifyReady + "\nSTATUS=serving on " + d.ln.Addr().String())
	d.log.Info("edgeapi serving",
		zap.String("version", version),
		zap.String("listen", d.ln.Addr().String()),
		zap.String("insecure_listen", listenerAddr(d.insecureLn)),
		zap.String("unix_socket", d.cfg.UnixSocket),
		zap.String("data_dir", d.cfg.DataDir),
		zap.String("kubeconfig", d.kubeconfigPath),
		zap.Int64("rev", d.db.Rev()),
		zap.Duration("startup", time.Since(d.started)))

	// Pings only while the store's writer and the HTTP server work.
	stopWatchdog := d.startWatchdog()

	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			d.log.Info("shutting down (a second signal exits at once)")
			break loop
		case err = <-serveErr:
			err = fmt.Errorf("serve http: %w", err)
			d.log.Error("http server stopped", zap.Error(err))
			serveErr = nil
			break loop
		}
	}

	stopWatchdog()
	stopCompactor()
	<-compactorDone
	if shutdownErr := d.shutdown(serveErr); err == nil {
		err = shutdownErr
	}
	if err == nil {
		d.log.Info("edgeapi stopped")
	}
	return err
}

// shutdown stops the daemon in order: stop accepting and let in-flight
// requests finish while the API ends its watches and background loops, then
// close the store, which drains queued writes and checkpoints the WAL. It
// runs every step and returns the first error. serveErr, when not nil,
// receives Serve's return once the listener is closed.
func (d *daemon) shutdown(serveErr <-chan error) error {
	d.notify(sddaemon.SdNotifyStopping)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()

	// Shutdown waits for handlers to return, and watch handlers return
	// only once the API ends the watches, so the two run together.
	var httpErr, apiErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		httpErr = d.srv.Shutdown(ctx)
	}()
	go func() {
		defer wg.Done()
		// The controllers follow the API's watch cache: stop them first.
		d.ctrl.Close()
		apiErr = d.api.Close(ctx)
	}()
	wg.Wait()
	if httpErr != nil {
		d.log.Warn("requests still running after shutdown timeout; closing their connections",
			zap.Duration("timeout", shutdownTimeout), zap.Error(httpErr))
		_ = d.srv.Close()
		httpErr = fmt.Errorf("shut down http server: %w", httpErr)
	}
	if serveErr != nil {
		if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) && httpErr == nil {
			httpErr = fmt.Errorf("serve http: %w", err)
		}
	}
	if apiErr != nil {
		apiErr = fmt.Errorf("close api server: %w", apiErr)
	}
	// After the HTTP server: the requests that ended during shutdown
	// are logged.
	var auditErr error
	if d.audit != nil {
		auditErr = d.audit.Close()
	}

	var storeErr error
	if err := d.db.Close(); err != nil {
		storeErr = fmt.Errorf("close store: %w", err)
	}
	d.unlock()

	// The first error is returned (and printed by main); log the others.
	first := firstErr(httpErr, apiErr, auditErr, storeErr)
	for _, err := range []error{httpErr, apiErr, auditErr, storeErr} {
		if err != nil && err != first {
			d.log.Error("shut down", zap.Error(err))
		}
	}
	return first
}

// statsPath serves the daemon's own figures (store counters, goroutines,
// uptime) as JSON for scripts/bench and operators. It sits outside the
// Kubernetes API, which httpapi serves.
const statsPath = "/debug/edgeapi/stats"

// admitWatch is the API's Config.AdmitWatch: the bounds of --max-watches
// and --max-watches-per-user, or nil without them.
func (d *daemon) admitWatch() func(http.ResponseWriter, *http.Request) (func(), bool) {
	l := newWatchLimit(d.cfg.MaxWatches, d.cfg.MaxWatchesPerUser, func(w http.ResponseWriter, r *http.Request, err error) {
		d.api.WriteError(w, r, err) // d.api is set once the API exists
	})
	if l == nil {
		return nil
	}
	return l.admit
}

// extraHandlers are the paths served beside the Kubernetes API: the
// daemon's figures and the ServiceAccount issuer discovery.
func (d *daemon) extraHandlers() map[string]http.Handler {
	m := map[string]http.Handler{statsPath: d.statsHandler(), metricsPath: d.metrics.handler(), backupPath: d.backupHandler()}
	for path, h := range d.saTokens.discovery {
		m[path] = h
	}
	return m
}

// statsHandler serves statsPath.
func (d *daemon) statsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, err := json.Marshal(map[string]any{
			"store":          d.storeStats(),
			"goroutines":     runtime.NumGoroutine(),
			"uptime_seconds": time.Since(d.started).Seconds(),
			"version":        version,
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
}

// closeOpened releases what startDaemon opened before it failed.
func (d *daemon) closeOpened() {
	if d.ctrl != nil {
		d.ctrl.Close()
	}
	if d.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := d.api.Close(ctx); err != nil {
			d.log.Warn("close api server", zap.Error(err))
		}
		cancel()
	}
	if d.ln != nil {
		d.ln.Close()
	}
	if d.audit != nil {
		if err := d.audit.Close(); err != nil {
			d.log.Warn("close audit log", zap.Error(err))
		}
	}
	if d.insecureLn != nil {
		d.insecureLn.Close()
	}
	if d.unixLn != nil {
		d.unixLn.Close()
	}
	if d.db != nil {
		if err := d.db.Close(); err != nil {
			d.log.Warn("close store", zap.Error(err))
		}
	}
	if d.unlock != nil {
		d.unlock()
	}
}

// notify sends state to systemd's notification socket. Outside systemd
// (no NOTIFY_SOCKET) it does nothing.
func (d *daemon) notify(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		d.log.Warn("notify systemd", zap.String("state", state), zap.Error(err))
	}
}

// lockDataDir takes an exclusive lock on dataDir so that two daemons never
// share one database. The lock goes away with the process; the returned
// function releases it earlier.
func lockDataDir(dataDir string) (unlock func(), err error) {
	path := filepath.Join(dataDir, "edgeapi.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock data dir: %s is in use by another edgeapi", dataDir)
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return func() { f.Close() }, nil
}

// warnOpenDataDir warns when others than the daemon's user may read or
// write the data directory (one that existed before, with a wider mode
// than the 0700 it is created with). The database files themselves are
// 0600 (see store.Open), but the directory also holds the kubeconfig and
// lets others list, replace or delete them. The mode is the operator's
// choice, so it is only a warning.
func warnOpenDataDir(dataDir string, log *zap.Logger) {
	st, err := os.Stat(dataDir)
	if err != nil {
		return // the lock or the store reports it
	}
	if mode := st.Mode().Perm(); mode&0o077 != 0 {
		log.Warn("data dir is accessible to other users; chmod 700 it",
			zap.String("data_dir", dataDir), zap.Stringer("mode", mode))
	}
}

// mustStdLog adapts log for net/http's own messages (bad requests, panics
// in handlers), which are worth a warning.
func mustStdLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.WarnLevel)
	if err != nil {
		panic(err) // only for invalid levels
	}
	return l
}

// listenerAddr is ln's address, or "" for no listener.
func listenerAddr(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// kubernetesService is the default/kubernetes Service kube-apiserver's
// bootstrap controller keeps: the first cluster IP of the range, port 443
// named https, targeting the port edgeapi listens on, and no selector
// (nothing proxies it; clients such as kubectl cluster-info list it).
func kubernetesService(opts registry.BuiltinOptions, listen net.Addr) (*corev1.Service, error) {
	ip, err := registry.KubernetesServiceIP(opts)
	if err != nil {
		return nil, fmt.Errorf("kubernetes service: %w", err)
	}
	port := 443
	if tcp, ok := listen.(*net.TCPAddr); ok {
		port = tcp.Port
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kubernetes",
			Namespace: metav1.NamespaceDefault,
			Labels:    map[string]string{"component": "apiserver", "provider": "kubernetes"},
		},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			ClusterIP:       ip.String(),
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(port)),
			}},
		},
	}, nil
}

// laterBinaryBytes is what serving adds to the binary's resident pages
// after measureBinaryPages reads them: the amd64 binary had 21.6-24.6 MiB
// resident there (it varies with how much of the file the kernel maps
// around each page fault), 26.9 MiB once ready and 28.5-31 MiB after the
// bench's workloads.
const laterBinaryBytes = 8 << 20

// measureBinaryPages returns the binary's resident pages for the memory
// budget: those resident once package initialization is done, before the
// store opens, plus laterBinaryBytes; or 0 (budgetFor then counts
// DefaultBinaryBytes) when they cannot be read.
func measureBinaryPages(log *zap.Logger) int64 {
	n, err := binaryResidentBytes()
	if err != nil {
		log.Info("binary's resident pages unknown, counting the default", zap.Error(err), zap.Int64("binary_pages", DefaultBinaryBytes))
		return 0
	}
	return n + laterBinaryBytes
}

// setMemoryLimit logs the memory budget and sets the Go runtime's soft
// memory limit to its GoLimit (see budget.go), unless GOMEMLIMIT does.
// Near the limit the collector runs more often (using at most half the
// CPU), so garbage from bursts of large requests is freed instead of
// staying resident: 100,000 hostile requests peaked at 1,089 MiB without
// a limit and at 260 MiB with one of 200 MiB.
func setMemoryLimit(b memoryBudget, log *zap.Logger) {
	log.Info("memory budget", zap.Int64("binary_pages", b.BinaryBytes), zap.Int64("go_limit", b.GoLimit), zap.Int("sqlite_cache_per_conn", b.SQLiteCacheBytes),
		zap.Int("sqlite_mmap", b.SQLiteMmapBytes), zap.Int("watch_cache_bytes", b.WatchCacheBytes),
		zap.Int("watch_cache_events", b.WatchCacheEvents), zap.Int("object_cache_bytes", b.ObjectCacheBytes))
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Info("memory limit from GOMEMLIMIT", zap.String("GOMEMLIMIT", v))
		return
	}
	if b.GoLimit > 0 {
		debug.SetMemoryLimit(b.GoLimit)
	}
}
