package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/store"
)

// livenessProbe is one check the daemon must pass before it pings the
// systemd watchdog. check returns nil when the part is alive; it is given
// a context bounded by the watchdog's probe timeout.
type livenessProbe struct {
	name  string
	check func(ctx context.Context) error
}

// watchdog pings systemd's watchdog (WATCHDOG=1) on each tick, but only
// while every probe passes. A daemon whose store writer or HTTP server
// has stopped working therefore stops pinging, and systemd kills it
// (WatchdogSignal, SIGABRT by default, which has the Go runtime print
// every goroutine's stack to the journal) and restarts it.
//
// One failed tick skips one ping; systemd acts only after WatchdogSec
// without any, so a part that stays stuck for a whole WatchdogSec gets the
// restart, and a short stall does not.
type watchdog struct {
	probes []livenessProbe
	// timeout bounds each tick's probes together. With ticks every
	// WatchdogSec/3 and the same timeout, pings are at most 2/3 of
	// WatchdogSec apart while healthy.
	timeout time.Duration
	notify  func(state string)
	log     *zap.Logger
	// failing is the failure reported at the last tick, "" when healthy;
	// only the watchdog's goroutine uses it.
	failing string
}

// tick runs the probes in order and pings the watchdog when all pass. It
// reports whether it pinged. A change between healthy and failing is
// logged once and shown in the unit's status (STATUS=).
func (w *watchdog) tick(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	for _, p := range w.probes {
		if err := p.check(ctx); err != nil {
			msg := fmt.Sprintf("%s: %v", p.name, err)
			if msg != w.failing {
				w.log.Error("liveness probe failed; not pinging the systemd watchdog",
					zap.String("probe", p.name), zap.Error(err))
				w.notify("STATUS=unhealthy, watchdog not pinged: " + msg)
			}
			w.failing = msg
			return false
		}
	}
	if w.failing != "" {
		w.log.Info("liveness probes pass again; pinging the systemd watchdog")
		w.notify("STATUS=serving")
		w.failing = ""
	}
	w.notify(sddaemon.SdNotifyWatchdog)
	return true
}

// run ticks every interval until ctx ends.
func (w *watchdog) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.tick(ctx)
		}
	}
}

// startWatchdog starts pinging systemd's watchdog when the unit has one
// (WatchdogSec=, seen as WATCHDOG_USEC), every third of its interval, with
// two probes: the store's writer (store.DB.Alive) and the HTTP server,
// asked for /livez over its own listener. It returns the function that
// stops it, which waits for the goroutine to end.
func (d *daemon) startWatchdog() (stop func()) {
	interval, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		d.log.Warn("read systemd watchdog settings", zap.Error(err))
		return func() {}
	}
	if interval <= 0 {
		return func() {}
	}
	var probes []livenessProbe
	// The SQLite writer is this process's own: stuck, a restart is the
	// cure. etcd is not: as kube-apiserver left etcd out of /livez, an
	// etcd outage shows in /readyz (the etcd check) and does not restart
	// the daemon.
	if p, ok := d.db.(store.Prober); ok && d.cfg.StorageBackend == backendSQLite {
		probes = append(probes, livenessProbe{name: "store writer", check: p.Alive})
	}
	probes = append(probes, livenessProbe{name: "http server", check: d.probeHTTP()})
	w := &watchdog{
		probes:  probes,
		timeout: interval / 3,
		notify:  d.notify,
		log:     d.log.Named("watchdog"),
	}
	d.log.Debug("systemd watchdog enabled", zap.Duration("interval", interval))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// systemd recommends pinging at half the interval; a third
		// leaves room for a slow probe.
		w.run(ctx, interval/3)
	}()
	return func() {
		cancel()
		<-done
	}
}

// probeHTTP returns the HTTP server's liveness probe: a GET /livez over a
// new connection to the daemon's own HTTPS listener, so that it passes
// only while the server accepts connections, completes TLS handshakes and
// runs handlers. Any HTTP answer passes, even 401 or 429: the probe asks
// whether the server works, not whether it admits the probe. It presents
// the generated admin certificate when there is one. The probe's
// requests are ordinary requests: they show in the request metrics and,
// with a policy that records /livez, in the audit log.
func (d *daemon) probeHTTP() func(ctx context.Context) error {
	cfg := &tls.Config{
		// The daemon talks to itself; what it checks is that the
		// handshake completes, not who is on the other end.
		InsecureSkipVerify: true, //nolint:gosec // see above
		MinVersion:         tls.VersionTLS12,
	}
	if b := d.tls.bundle; b != nil && len(b.AdminCert) > 0 {
		if cert, err := tls.X509KeyPair(b.AdminCert, b.AdminKey); err == nil {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: cfg,
		// A new connection each time: the probe must see the accept
		// loop work, not reuse a connection it accepted long ago.
		DisableKeepAlives: true,
		Proxy:             nil,
	}}
	url := "https://" + clientAddress(d.ln.Addr()) + "/livez"
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probe http: %w", err)
		}
		req.Header.Set("User-Agent", "edgeapi-watchdog")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("probe http: %w", err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)) //nolint:errcheck // any answer passes
		return nil
	}
}
