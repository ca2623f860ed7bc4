// Package httpapi serves the Kubernetes resource API over HTTP with echo:
// routing, content negotiation, request handling, watch and discovery.
package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Defaults for Config fields left zero.
const (
	// DefaultMaxRequestBodyBytes is kube-apiserver's limit for a request
	// body (3 MiB); larger bodies get 413.
	DefaultMaxRequestBodyBytes = 3 << 20
	// DefaultEventTTL is how long Events live, like kube-apiserver's
	// --event-ttl.
	DefaultEventTTL = time.Hour
)

// Config configures a Server.
type Config struct {
	// Store holds the objects. Required.
	Store store.Store
	// Registry lists the served kinds. Required.
	Registry *registry.Registry
	// Logger receives request and error logs; nil means no logging.
	Logger *zap.Logger
	// EventTTL is how long Events live (DefaultEventTTL when zero).
	EventTTL time.Duration
	// MaxRequestBodyBytes bounds request bodies
	// (DefaultMaxRequestBodyBytes when zero).
	MaxRequestBodyBytes int64
	// WatchCache bounds the watch cache (store defaults when zero).
	WatchCache store.WatchCacheConfig
	// ServerAddress is advertised in /api serverAddressByClientCIDRs
	// ("127.0.0.1:6443").
	ServerAddress string
}

// Server is the API server. Create it with New, call Start to run its
// background loops (namespace finalization, Event expiry), serve Handler, and
// call Close on shutdown.
type Server struct {
	cfg           Config
	log           *zap.Logger
	echo          *echo.Echo
	codecs        *codecs
	fieldManagers *fieldManagers

	// nsKick wakes the namespace controller.
	nsKick chan struct{}
	// namespaces mirrors namespace existence for create admission.
	namespaces            namespaceStates
	unsubscribeNamespaces func()
	// watchCache fans committed events out to watch streams.
	watchCache *store.WatchCache
	// baseCtx ends when the server closes; watches end with it.
	baseCtx     context.Context
	closeServer context.CancelFunc

	wg sync.WaitGroup
	// streams counts running watch streams; streamSet holds them, each
	// with whether it owns its connection.
	streams          sync.WaitGroup
	streamsMu        sync.Mutex
	streamSet        map[*watchStream]bool
	peerCheckRunning bool
	// coalesced are the streams waiting for the end of the coalescing
	// interval (see watchCoalesce).
	coalesceMu    sync.Mutex
	coalesced     []*watchStream
	coalesceArmed bool
	coalesceTimer *time.Timer
	// runq feeds the stream workers, started once, stopped by Close.
	startWorkers sync.Once
	runq         chan *watchStream
	stopWorkers  chan struct{}
	cancel       context.CancelFunc
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	s := &Server{
		cfg:           cfg,
		log:           cfg.Logger,
		codecs:        newCodecs(),
		fieldManagers: newFieldManagers(),
		nsKick:        make(chan struct{}, 1),
		watchCache:    store.NewWatchCache(cfg.Store, cfg.WatchCache),
	}
	s.baseCtx, s.closeServer = context.WithCancel(context.Background())
	s.namespaces.terminating = make(map[string]bool)
	s.unsubscribeNamespaces = cfg.Store.Subscribe(s.namespaces.observe)
	s.echo = s.routes()
	return s, nil
}

// Handler returns the HTTP handler serving the API.
func (s *Server) Handler() http.Handler { return s.echo }

// Start creates the system namespaces if missing and runs the background
// loops (namespace finalization, Event expiry) until Close or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.loadNamespaces(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	if err := s.ensureBootstrapNamespaces(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		newGarbageCollector(s).run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.runNamespaceController(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.runEventExpiry(ctx)
	}()
	// Parse the served kinds' schemas off the request path.
	go s.fieldManagers.typeConverter()
	return nil
}

// Close ends open watches and stops the background loops, waiting for them.
func (s *Server) Close(ctx context.Context) error {
	s.closeServer()
	s.endStreams()
	if s.cancel != nil {
		s.cancel()
	}
	s.watchCache.Close()
	s.unsubscribeNamespaces()
	s.wg.Wait()
	s.streams.Wait()
	s.startWorkers.Do(func() {})
	if s.stopWorkers != nil {
		close(s.stopWorkers)
	}
	return nil
}
