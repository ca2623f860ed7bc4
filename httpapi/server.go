// Package httpapi serves the Kubernetes resource API over HTTP with echo:
// routing, content negotiation, request handling, watch and discovery.
package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Defaults for Config fields left zero.
const (
	// DefaultMaxRequestBodyBytes is kube-apiserver's limit for a request
	// body (3 MiB); larger bodies get 413.
	DefaultMaxRequestBodyBytes = 3 << 20
	// DefaultBodyMemoryBytes is the memory request bodies share when
	// Config.BodyMemoryBytes is zero: five of the largest at once.
	DefaultBodyMemoryBytes = 5 * DefaultMaxRequestBodyBytes
	// DefaultIdleTimeout is how long a connection handed back after a
	// watch waits for its next request, as http.Server's IdleTimeout
	// (kube-apiserver: 90 s).
	DefaultIdleTimeout = 90 * time.Second
	// DefaultMaxLargeRequests is how many requests with a body over
	// 256 KiB are processed at once.
	DefaultMaxLargeRequests = 1
)

// Config configures a Server.
type Config struct {
	// Store holds the objects. Required.
	Store store.Store
	// Registry lists the served kinds. Required.
	Registry *registry.Registry
	// Logger receives request and error logs; nil means no logging.
	Logger *zap.Logger
	// MaxRequestBodyBytes bounds request bodies
	// (DefaultMaxRequestBodyBytes when zero).
	MaxRequestBodyBytes int64
	// WatchCache bounds the watch cache (store defaults when zero).
	WatchCache store.WatchCacheConfig
	// ServerAddress is advertised in /api serverAddressByClientCIDRs
	// ("127.0.0.1:6443").
	ServerAddress string
	// RequestTimeout bounds how long a client may take to send a request
	// body, like kube-apiserver's --request-timeout; zero means no bound.
	// A body still unread then fails the request with 504 Timeout.
	RequestTimeout time.Duration
	// ResponseCompression says which clients that ask for gzip get
	// responses over 128 KiB compressed (CompressRemote when zero; see
	// compress.go).
	ResponseCompression CompressionMode
	// MaxLargeRequests is how many requests with a body over 256 KiB are
	// processed at once (DefaultMaxLargeRequests when zero); others wait.
	MaxLargeRequests int
	// ListBufferBytes is the size of stored values up to which a LIST
	// response is built in memory (DefaultListBufferBytes when zero);
	// larger lists are read and written in pages.
	ListBufferBytes int
	// ListMemoryBytes is the memory all LISTs in flight share for their
	// responses (DefaultListMemoryBytes when zero; see memgate.go): a
	// LIST gets up to twice ListBufferBytes of it, and less, down to
	// minListGrant, while others hold it; past that it waits, and gets
	// kube-apiserver's 429 after 10 s.
	ListMemoryBytes int64
	// BodyMemoryBytes is the memory the request bodies being read and
	// processed share (DefaultBodyMemoryBytes when zero): a request waits
	// for its body's size of it before reading the body, and gets
	// kube-apiserver's 429 after 10 s.
	BodyMemoryBytes int64
	// ServedCacheBytes bounds the cache of converted custom resources'
	// served JSON (see servedcache.go; DefaultServedCacheBytes when zero).
	// The cache is shared by every Server of the process: the last New
	// sets its bound.
	ServedCacheBytes int
	// UpdateCacheBytes bounds the cache of the managedFields updates of
	// built-in kinds get (see fieldmanager_update.go;
	// DefaultUpdateCacheBytes when zero).
	UpdateCacheBytes int
	// IdleTimeout is how long a connection handed back after a watch
	// (see HandoffListener) waits for its next request
	// (DefaultIdleTimeout when zero).
	IdleTimeout time.Duration
	// KubernetesService, when set, is created at start if no Service of
	// its namespace and name exists (the default/kubernetes Service that
	// kube-apiserver's bootstrap controller maintains).
	KubernetesService *corev1.Service
	// Tokens signs the tokens of the serviceaccounts/token subresource;
	// nil leaves the subresource unserved (404).
	Tokens TokenIssuer
	// Authorizer decides every request before it is routed, as
	// kube-apiserver's authorization filter does: one it does not allow
	// gets 403, whether or not the object exists. The user is the one
	// authentication in front of Handler put in the request's context
	// (authn.WithUser); a request without one gets 401. Nil serves every
	// request without asking.
	Authorizer authorizer.Authorizer
	// RuleResolver lists the rules that apply to a user in a namespace,
	// for SelfSubjectRulesReview (kubectl auth can-i --list), as
	// kube-apiserver's rule resolver beside its authorizer. Nil lists
	// everything, as for a server that allows every request.
	RuleResolver authorizer.RuleResolver
	// AdmitWrite, when set, is asked about each create (old nil) and
	// update of an object made by a user's request, with the new object
	// before validation; an error refuses the write. Writes of the
	// controllers (no user in their context) are not asked. The RBAC
	// escalation checks are one.
	AdmitWrite func(ctx context.Context, u user.Info, obj, old runtime.Object) error
	// AdmitWatch, when set, is asked before each watch starts. It either
	// admits the watch and returns release, which is called once when
	// the watch ends, or writes the refusal to w itself and returns false.
	// A watch outlives its handler when it owns its connection, so a
	// filter in front of the handler cannot count watches.
	AdmitWatch func(w http.ResponseWriter, r *http.Request) (release func(), ok bool)
	// Extra are handlers served at exact paths outside the Kubernetes
	// API (the daemon's own figures), behind the same authorization:
	// RBAC lets a user reach one through nonResourceURLs.
	Extra map[string]http.Handler
	// Metrics, when set, records every request (see NewMetrics).
	Metrics *Metrics
}

// Server is the API server. Create it with New, call Start, serve Handler,
// and call Close on shutdown.
type Server struct {
	cfg  Config
	log  *zap.Logger
	echo *echo.Echo
	// chain serves every request through echo (routeChain).
	chain         echo.HandlerFunc
	codecs        *codecs
	fieldManagers *fieldManagers

	// readyChecks are the conditions /readyz and /healthz report besides
	// ping and the store (see AddReadyCheck).
	readyChecks []readyCheck

	// namespaces mirrors namespace existence for create admission.
	namespaces            namespaceStates
	unsubscribeNamespaces func()
	// watchCache fans committed events out to watch streams.
	watchCache *store.WatchCache
	// largeBodies holds a token per request with a large body being
	// processed (capacity Config.MaxLargeRequests).
	largeBodies chan struct{}
	// listMemory is shared by the LISTs in flight (Config.ListMemoryBytes).
	listMemory *memGate
	// bodyMemory is shared by the request bodies held (Config.BodyMemoryBytes).
	bodyMemory *memGate
	// handoff takes back the connections of finished watches.
	handoff *handoffListener
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
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxLargeRequests <= 0 {
		cfg.MaxLargeRequests = DefaultMaxLargeRequests
	}
	served.setMaxBytes(cmp.Or(cfg.ServedCacheBytes, DefaultServedCacheBytes))
	protoSizes.setMaxBytes(cmp.Or(cfg.ListBufferBytes, DefaultListBufferBytes) / 2)
	s := &Server{
		cfg:           cfg,
		log:           cfg.Logger,
		codecs:        newCodecs(),
		fieldManagers: newFieldManagers(cfg.Registry, cfg.UpdateCacheBytes),
		watchCache:    store.NewWatchCache(cfg.Store, cfg.WatchCache),
		handoff:       newHandoffListener(cfg.IdleTimeout),
		largeBodies:   make(chan struct{}, cfg.MaxLargeRequests),
		listMemory:    newMemGate(cmp.Or(cfg.ListMemoryBytes, DefaultListMemoryBytes)),
		bodyMemory:    newMemGate(cmp.Or(cfg.BodyMemoryBytes, DefaultBodyMemoryBytes)),
	}
	s.baseCtx, s.closeServer = context.WithCancel(context.Background())
	s.namespaces.terminating = make(map[string]bool)
	s.unsubscribeNamespaces = cfg.Store.Subscribe(s.namespaces.observe)
	s.echo = s.routes()
	s.chain = s.routeChain(s.echo)
	return s, nil
}

// Handler returns the HTTP handler serving the API.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// serveHTTP serves r: under the body deadline, and with a large response
// compressed when the client asks (see compress.go).
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.RequestTimeout > 0 {
		r = s.withBodyDeadline(w, r)
	}
	if s.wantsCompression(r) {
		cw := newCompressWriter(w)
		defer cw.finish()
		w = cw
	}
	c := s.echo.AcquireContext()
	c.Reset(r, w)
	if err := s.chain(c); err != nil {
		s.echo.HTTPErrorHandler(err, c)
	}
	s.echo.ReleaseContext(c)
}

// HandoffListener returns the listener through which the connections of
// finished watches come back for their next request. Serve it with the
// same http.Server that serves Handler (http.Server.Serve); Close, or the
// http.Server's Shutdown, closes it. Until it is served, a watch response
// says "Connection: close" and its connection closes when it ends, since
// net/http cannot serve a connection a watch took over.
func (s *Server) HandoffListener() net.Listener { return s.handoff }

// withBodyDeadline bounds the time a client may take to send the request
// body by RequestTimeout, with a read deadline on the connection that is
// lifted once the body is read; it returns r with that body. Without it,
// a client trickling a body would hold its connection and handler for as
// long as it likes: http.Server bounds only the header
// (ReadHeaderTimeout), and its ReadTimeout would also end watches, whose
// connection reads run all along. A request without a body sets no
// deadline at all.
func (s *Server) withBodyDeadline(w http.ResponseWriter, r *http.Request) *http.Request {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return r
	}
	// net/http's ResponseWriter has the method ResponseController calls,
	// without the controller's allocation.
	rd, ok := w.(readDeadliner)
	if !ok || rd.SetReadDeadline(time.Now().Add(s.cfg.RequestTimeout)) != nil {
		return r // not a connection net/http can bound (a test recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rd: rd}
	return r
}

type readDeadliner interface{ SetReadDeadline(time.Time) error }

// deadlineBody lifts the read deadline once the body is read to its end,
// so that a long request keeps its context (net/http's reader after the
// body would otherwise fail at the deadline and cancel it).
type deadlineBody struct {
	io.ReadCloser
	rd readDeadliner
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		_ = b.rd.SetReadDeadline(time.Time{})
	}
	return n, err
}

// Start creates the system namespaces if missing. The controllers that
// act on objects (garbage collection, namespace finalization, Event
// expiry) run outside the HTTP layer, in package controller.
func (s *Server) Start(ctx context.Context) error {
	if err := s.loadNamespaces(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	if err := s.loadKindStates(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	if err := s.ensureBootstrapNamespaces(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	if err := s.ensureKubernetesService(ctx); err != nil {
		return fmt.Errorf("start api server: %w", err)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	// Parse the served kinds' schemas off the request path.
	go s.fieldManagers.typeConverter()
	return nil
}

// Close ends open watches and stops the background loops, waiting for them.
func (s *Server) Close(ctx context.Context) error {
	s.closeServer()
	_ = s.handoff.Close()
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

// WatchCache returns the watch cache that serves the server's watches,
// for controllers that follow the store with it.
func (s *Server) WatchCache() *store.WatchCache { return s.watchCache }

// DeleteObject deletes an object of kind k as a DELETE request with opts
// does (finalizers, propagation, preconditions); deleted reports that it
// is gone rather than marked. Errors are Status errors. It is how the
// controllers delete (controller.Objects).
func (s *Server) DeleteObject(ctx context.Context, k *registry.Kind, namespace, name string, opts *metav1.DeleteOptions) (deleted bool, err error) {
	res, err := s.deleteObject(ctx, k, namespace, name, opts)
	return res.deleted, err
}

// UpdateObject updates an object of kind k as a PUT of subresource ("" or
// "status") by manager would: fn computes the new state from a copy of
// the current one, and field management, the strategy and validation run
// on it; a conflict with another writer rereads and calls fn again.
// deleted reports that the update emptied the finalizers of an object
// being deleted, which removed it. Errors are Status errors. It is how
// the controllers write status (controller.Objects).
func (s *Server) UpdateObject(ctx context.Context, k *registry.Kind, namespace, name, subresource, manager string, fn func(cur runtime.Object) (runtime.Object, error)) (deleted bool, err error) {
	r := &request{kind: k, ri: requestInfo{Verb: "update", Group: k.GVK.Group, Version: k.GVK.Version,
		Resource: k.Resource, Namespace: namespace, Name: name, Subresource: subresource}}
	res, err := s.guaranteedUpdate(ctx, r, subresource, manager, false, fn)
	return res.deleted, err
}

// CreateObject creates obj, of kind k, as a POST by manager would: field
// management, the strategy and validation run on it. Errors are Status
// errors, AlreadyExists included. It is how the controllers create
// (controller.Objects).
func (s *Server) CreateObject(ctx context.Context, k *registry.Kind, obj runtime.Object, manager string) error {
	m := registry.Accessor(obj)
	r := &request{kind: k, ri: requestInfo{Verb: "create", Group: k.GVK.Group, Version: k.GVK.Version,
		Resource: k.Resource, Namespace: m.GetNamespace()}}
	_, _, err := s.createObject(ctx, r, obj, manager, false)
	return err
}
