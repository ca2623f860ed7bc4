package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The watch-idle-ref-h2 workload is the floor under watch-idle's client-go
// pass: what Go's own HTTP/2 server holds per idle stream, with no
// edgeapi. The bench runs itself as a minimal HTTPS server ("bench
// idle-ref-h2") whose handler writes a watch's response header, flushes
// and waits; it opens --idle-watchers idle watches on it through a
// transport that puts DefaultH2RefStreams streams on each connection, as
// client-go's does against edgeapi, and reads the server process's RSS
// before and after. A server of its own process, so that its RSS holds
// only the server side.

// idleRefSubcommand is the bench's argument that runs the server.
const idleRefSubcommand = "idle-ref-h2"

// idleRefServeMain serves idle watches over HTTP/2 with TLS on loopback.
// It prints its URL on one line, then its certificate as PEM, and serves
// until its standard input ends.
func idleRefServeMain(stdin io.Reader, stdout io.Writer) int {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache, private")
		w.WriteHeader(http.StatusOK)
		if err := http.NewResponseController(w).Flush(); err != nil {
			return
		}
		<-r.Context().Done()
	}))
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: DefaultH2RefStreams}
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.StartTLS()
	defer srv.Close()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if _, err := fmt.Fprintf(stdout, "%s\n%s", srv.URL, cert); err != nil {
		return 1
	}
	io.Copy(io.Discard, stdin)
	return 0
}

// idleRefServer is a running idle-ref-h2 server process.
type idleRefServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
	roots *x509.CertPool
}

// startIdleRefServer starts this program as the idle-ref-h2 server.
func startIdleRefServer(ctx context.Context) (*idleRefServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the bench's own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, idleRefSubcommand)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", idleRefSubcommand, err)
	}
	s := &idleRefServer{cmd: cmd, stdin: stdin, roots: x509.NewCertPool()}
	br := bufio.NewReader(stdout)
	line, err := br.ReadString('\n')
	var cert strings.Builder
	for err == nil {
		var l string
		if l, err = br.ReadString('\n'); err == nil {
			cert.WriteString(l)
			if strings.HasPrefix(l, "-----END") {
				break
			}
		}
	}
	if err != nil || !s.roots.AppendCertsFromPEM([]byte(cert.String())) {
		s.stop()
		return nil, fmt.Errorf("read the %s server's URL and certificate: %v", idleRefSubcommand, err)
	}
	s.url = strings.TrimSpace(line)
	return s, nil
}

// transport returns a client transport that speaks HTTP/2 to the server,
// up to the server's streams per connection each.
func (s *idleRefServer) transport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: s.roots},
		ForceAttemptHTTP2: true,
		ReadBufferSize:    idleWatchBuffer,
		WriteBufferSize:   idleWatchBuffer,
	}
}

// stop ends the server and waits for it.
func (s *idleRefServer) stop() error {
	s.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		return errors.Join(errors.New("idle-ref-h2 server did not stop"), <-done)
	}
}

func runWatchIdleRefH2(ctx context.Context, b *bench) ([]Result, error) {
	s, err := startIdleRefServer(ctx)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	pid := s.cmd.Process.Pid
	before, err := rssBytes(pid)
	if err != nil {
		return nil, err
	}
	n := b.cfg.idleWatchers
	tr := s.transport()
	defer tr.CloseIdleConnections()
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	_, cs := connectWatchersAs(watchCtx, tr, s.url+"/api/v1/namespaces/idle/configmaps?watch=1", n, idleWatchBuffer, false)
	select {
	case <-cs.all:
	case <-time.After(DefaultIdleConnectTimeout):
		b.logf("watch-idle-ref-h2: %d of %d watchers connected after %s", cs.connected.Load(), n, DefaultIdleConnectTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	connectTime := time.Since(cs.start)
	settle(ctx, b.cfg.settle)
	after, err := rssBytes(pid)
	if err != nil {
		return nil, err
	}
	connected := cs.connected.Load()
	r := Result{Workload: "rss-watch-idle-ref-h2-" + shortCount(n), Clients: n, Value: toMiB(after), Unit: "MiB", Target: targetWatchIdle}
	r.note("floor reference: no edgeapi; a minimal Go HTTP/2 server over TLS in a process of its own holds %d idle watch streams (%d per connection): RSS %.1f MiB, %.1f MiB before them (%.1f KiB per stream)",
		connected, DefaultH2RefStreams, toMiB(after), toMiB(before), float64(after-before)/1024/float64(max(connected, 1)))
	r.note("%d watchers connected in %s, %d failed", connected, connectTime.Round(time.Millisecond), cs.failed.Load())
	r.Errors = cs.failed.Load()
	stopWatches()
	cs.done.Wait()
	b.logResult(r)
	return []Result{r}, nil
}
