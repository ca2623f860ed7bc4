package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"go.uber.org/zap"
)

// startPprof serves net/http/pprof on addr (a loopback address, checked by
// the config) until the returned function is called. It is off by default
// and meant for profiling the daemon under load (--debug-pprof).
func startPprof(addr string, log *zap.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen debug-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No ReadTimeout: it would cut a CPU profile short (its handler
	// waits on the request context); pprof requests have no body.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: DefaultReadHeaderTimeout, IdleTimeout: DefaultIdleTimeout,
		MaxHeaderBytes: DefaultMaxHeaderBytes, ErrorLog: mustStdLog(log)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug-pprof server stopped", zap.Error(err))
		}
	}()
	log.Info("serving pprof", zap.String("listen", ln.Addr().String()))
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}
