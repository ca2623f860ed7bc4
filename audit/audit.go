// Package audit writes kube-apiserver's audit log: audit.k8s.io/v1 Event
// JSON lines at the Metadata level, for every request that changes
// something (the verbs create, update, patch, delete and deletecollection,
// whether they succeed or not) and for every request answered 401 or 403,
// whatever its verb. Bodies are never logged, nor credentials.
//
// Logger.WithAudit is the outermost filter of the handler chain: it gives
// every request an audit ID (the Audit-ID header of the response), and puts
// a record in the request's context that the inner filters fill: the user
// once authenticated (WithUser), the impersonated user (WithImpersonatedUser),
// the authorization decision (SetAuthorizationDecision), the Status of an
// error answer (SetResponseStatus) and the metadata of a created or updated
// object (SetObjectMeta). When the handler returns, the filter decides from
// the method, verb and code whether to log, and writes one line.
//
// Each request gives one event, of the stage ResponseComplete, as with
// kube-apiserver's audit policy `omitStages: [RequestReceived]`: the 401s
// and 403s of reads are known only once answered, and one line per request
// halves the log. A request that fails authentication gives the event
// kube-apiserver gives it, of the stage ResponseStarted and with an empty
// user; one whose handler panics, an event of the stage Panic.
package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Defaults of the audit log flags: kube-apiserver's.
const (
	// DefaultMaxSizeMB is the size in megabytes (MiB) at which the log is
	// rotated (--audit-log-maxsize).
	DefaultMaxSizeMB = 100
	// DefaultMaxBackups is how many rotated files are kept
	// (--audit-log-maxbackup).
	DefaultMaxBackups = 100
	// DefaultMaxAgeDays is how many days rotated files are kept
	// (--audit-log-maxage).
	DefaultMaxAgeDays = 366
)

const (
	// maxUserAgent is the longest userAgent logged; a longer one is cut
	// and ends with userAgentTruncated, as in kube-apiserver.
	maxUserAgent       = 1024
	userAgentTruncated = "...TRUNCATED"
	// errorLogInterval is the least time between two log messages about
	// events that could not be written.
	errorLogInterval = 10 * time.Second
)

// Config configures a Logger.
type Config struct {
	// Path is the log file; "-" is standard output.
	Path string
	// MaxSize is the size in bytes at which the file is rotated (0: never).
	MaxSize int64
	// MaxBackups is how many rotated files are kept (0: all).
	MaxBackups int
	// MaxAge is how long rotated files are kept, by the time in their names
	// (0: forever).
	MaxAge time.Duration
	// Attributes describes a request as the authorizer sees it: the verb,
	// and for a resource request the object. The user is not needed.
	Attributes func(*http.Request) authorizer.AttributesRecord
	// Logger receives the errors of writing the log, at most one message
	// every 10 seconds. Nil logs nothing.
	Logger *zap.Logger
	// Now is the clock; nil is time.Now. For tests.
	Now func() time.Time
}

// Logger writes the audit log. Create it with New, put WithAudit in front
// of the handler chain, and Close it after the HTTP server has shut down.
type Logger struct {
	attributes func(*http.Request) authorizer.AttributesRecord
	log        *zap.Logger
	now        func() time.Time
	out        *fileWriter
	bufs       sync.Pool    // *[]byte for encoding events
	lastErrLog atomic.Int64 // unix nanoseconds of the last write error logged
	failed     atomic.Int64 // events not written
}

// New opens the log file (creating it 0600, and its directory 0700) or
// standard output.
func New(cfg Config) (*Logger, error) {
	if cfg.Path == "" {
		return nil, errors.New("audit: no log path")
	}
	if cfg.Attributes == nil {
		return nil, errors.New("audit: no request attributes function")
	}
	if cfg.MaxSize < 0 || cfg.MaxBackups < 0 || cfg.MaxAge < 0 {
		return nil, errors.New("audit: negative rotation limit")
	}
	l := &Logger{attributes: cfg.Attributes, log: cfg.Logger, now: cfg.Now}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	if l.now == nil {
		l.now = time.Now
	}
	out, err := openFileWriter(cfg.Path, cfg.MaxSize, cfg.MaxBackups, cfg.MaxAge, l.now)
	if err != nil {
		return nil, err
	}
	l.out = out
	l.bufs.New = func() any {
		b := make([]byte, 0, 2048)
		return &b
	}
	return l, nil
}

// Close closes the log file. Events of requests still running are not
// written.
func (l *Logger) Close() error {
	if n := l.failed.Load(); n > 0 {
		l.log.Warn("audit events not written", zap.Int64("count", n))
	}
	return l.out.Close()
}

// Failed returns how many events could not be written.
func (l *Logger) Failed() int64 { return l.failed.Load() }

// record is what the filters learn about one request, in its context.
// Only the request's handler goroutine touches it, and the filter reads it
// once the handler has returned.
type record struct {
	rw            responseWriter // wraps the response to learn the code
	id            string
	idHeader      [1]string // the Audit-ID header's value, without its own allocation
	received      time.Time
	impersonating bool // the request had an Impersonate-User header
	user          user.Info
	impersonated  user.Info
	decided       bool // an authorizer decided: decision and reason are set
	decision      string
	reason        string
	status        *metav1.Status // the Status answered, if any
	// The created or updated object's metadata, for objectRef.
	objNamespace, objName, objUID, objRV string
}

type recordKey struct{}

// recordFrom returns the record of the request whose context is ctx, or
// nil when the request is not audited.
func recordFrom(ctx context.Context) *record {
	rec, _ := ctx.Value(recordKey{}).(*record)
	return rec
}

// WithAudit returns next behind the audit filter. It sets the Audit-ID
// response header on every response: the request's own Audit-ID header
// when it has one, as kube-apiserver does, or a new random UUID.
func (l *Logger) WithAudit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &record{received: l.now()}
		rec.rw.ResponseWriter = w
		if ids := r.Header[headerAuditIDKey]; len(ids) > 0 && ids[0] != "" {
			rec.id = ids[0]
		} else {
			rec.id = newUUID()
		}
		rec.impersonating = len(r.Header[impersonateUserHeader]) > 0
		rec.idHeader[0] = rec.id
		w.Header()[headerAuditIDKey] = rec.idHeader[:]
		defer func() {
			if p := recover(); p != nil {
				rec.status = &metav1.Status{
					Status:  metav1.StatusFailure,
					Reason:  metav1.StatusReasonInternalError,
					Message: fmt.Sprintf("APIServer panic'd: %v", p),
				}
				rec.rw.code = http.StatusInternalServerError
				l.finish(r, rec, StagePanic)
				panic(p)
			}
		}()
		next.ServeHTTP(&rec.rw, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
		l.finish(r, rec, "")
	})
}

// headerAuditIDKey is HeaderAuditID in the canonical form net/http keys
// headers by.
const headerAuditIDKey = "Audit-Id"

// impersonateUserHeader is the header that asks to act as another user.
const impersonateUserHeader = "Impersonate-User"

// mutatingVerbs are the verbs whose requests are always logged.
var mutatingVerbs = map[string]bool{
	"create":           true,
	"update":           true,
	"patch":            true,
	"delete":           true,
	"deletecollection": true,
}

// finish writes rec's event if the request is one to log. stage is empty
// for a request that returned normally.
func (l *Logger) finish(r *http.Request, rec *record, stage string) {
	code := rec.rw.code
	if code == 0 {
		// Nothing written (or the connection was taken over): kube-apiserver
		// records 200 too.
		code = http.StatusOK
	}
	denied := code == http.StatusUnauthorized || code == http.StatusForbidden
	if !denied && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// Reads (get, list, watch) that were not refused: the common case,
		// decided without parsing the path.
		return
	}
	attrs := l.attributes(r)
	if !denied && !mutatingVerbs[attrs.Verb] {
		return
	}
	if stage == "" {
		stage = StageResponseComplete
		if code == http.StatusUnauthorized && rec.user == nil {
			// Authentication failed: kube-apiserver's failed-authentication
			// filter logs only the stage ResponseStarted.
			stage = StageResponseStarted
		}
	}
	ev := Event{
		Kind:                     "Event",
		APIVersion:               "audit.k8s.io/v1",
		Level:                    LevelMetadata,
		AuditID:                  rec.id,
		Stage:                    stage,
		RequestURI:               r.URL.RequestURI(),
		Verb:                     attrs.Verb,
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(rec.received),
		StageTimestamp:           metav1.NewMicroTime(l.now()),
	}
	if len(ev.UserAgent) > maxUserAgent {
		ev.UserAgent = ev.UserAgent[:maxUserAgent] + userAgentTruncated
	}
	if rec.user != nil {
		ev.User = userInfo(rec.user)
	}
	if rec.impersonated != nil {
		u := userInfo(rec.impersonated)
		ev.ImpersonatedUser = &u
	}
	if ips := utilnet.SourceIPs(r); len(ips) > 0 {
		ev.SourceIPs = make([]string, len(ips))
		for i, ip := range ips {
			ev.SourceIPs[i] = ip.String()
		}
	}
	if attrs.ResourceRequest {
		ref := &ObjectReference{
			Resource:    attrs.Resource,
			Namespace:   attrs.Namespace,
			Name:        attrs.Name,
			APIGroup:    attrs.APIGroup,
			APIVersion:  attrs.APIVersion,
			Subresource: attrs.Subresource,
		}
		if ref.Namespace == "" {
			ref.Namespace = rec.objNamespace
		}
		if ref.Name == "" {
			ref.Name = rec.objName
		}
		ref.UID, ref.ResourceVersion = rec.objUID, rec.objRV
		ev.ObjectRef = ref
	}
	ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	if st := rec.status; st != nil {
		ev.ResponseStatus.Status = st.Status
		ev.ResponseStatus.Message = st.Message
		ev.ResponseStatus.Reason = st.Reason
		ev.ResponseStatus.Details = st.Details
	}
	if rec.decided {
		ev.Annotations = map[string]string{AnnotationDecision: rec.decision, AnnotationReason: rec.reason}
	}
	l.write(&ev)
}

// write appends ev as one JSON line.
func (l *Logger) write(ev *Event) {
	bp := l.bufs.Get().(*[]byte)
	b := append(ev.appendJSON((*bp)[:0]), '\n')
	_, err := l.out.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		l.bufs.Put(bp)
	}
	if err != nil {
		l.failed.Add(1)
		now := l.now().UnixNano()
		last := l.lastErrLog.Load()
		if now-last >= int64(errorLogInterval) && l.lastErrLog.CompareAndSwap(last, now) {
			l.log.Error("write audit event", zap.String("auditID", ev.AuditID), zap.Int64("failed_total", l.failed.Load()), zap.Error(err))
		}
	}
}

// userInfo converts u for an event.
func userInfo(u user.Info) UserInfo {
	return UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// newUUID returns a random (version 4) UUID. math/rand/v2's generator is
// ChaCha8, seeded from the system's randomness: unpredictable, and without
// a system call per request.
func newUUID() string {
	var b [16]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// WithUser returns next behind a filter that records the authenticated
// user, as userFrom finds it in the request's context, as the event's
// user. Put it right inside authentication.
func WithUser(next http.Handler, userFrom func(context.Context) (user.Info, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec := recordFrom(r.Context()); rec != nil {
			if u, ok := userFrom(r.Context()); ok {
				rec.user = u
			}
		}
		next.ServeHTTP(w, r)
	})
}

// WithImpersonatedUser returns next behind a filter that records the user
// in the request's context as the impersonated user when the request asked
// to impersonate. Put it right inside impersonation, which lets only
// allowed impersonation through.
func WithImpersonatedUser(next http.Handler, userFrom func(context.Context) (user.Info, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec := recordFrom(r.Context()); rec != nil && rec.impersonating {
			if u, ok := userFrom(r.Context()); ok {
				rec.impersonated = u
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Audited reports whether the request whose context is ctx is audited:
// then the authorizer's reason for an allowed request is worth building.
func Audited(ctx context.Context) bool { return recordFrom(ctx) != nil }

// SetAuthorizationDecision records the authorizer's decision on the
// request whose context is ctx, for the annotations
// authorization.k8s.io/decision (allow or forbid) and
// authorization.k8s.io/reason. It does nothing when the request is not
// audited.
func SetAuthorizationDecision(ctx context.Context, allowed bool, reason string) {
	if rec := recordFrom(ctx); rec != nil {
		rec.decided, rec.reason = true, reason
		rec.decision = DecisionForbid
		if allowed {
			rec.decision = DecisionAllow
		}
	}
}

// SetResponseStatus records the Status the request whose context is ctx is
// answered with: its status, message, reason and details go into the
// event's responseStatus. st must not change afterwards. It does nothing
// when the request is not audited.
func SetResponseStatus(ctx context.Context, st *metav1.Status) {
	if rec := recordFrom(ctx); rec != nil {
		rec.status = st
	}
}

// SetObjectMeta records the metadata of the object a create or update
// request sent: its namespace and name fill the objectRef where the URL
// has none (a create names the object only in its body), and its uid and
// resourceVersion are logged, as kube-apiserver logs them. It does nothing
// when the request is not audited.
func SetObjectMeta(ctx context.Context, m metav1.Object) {
	if rec := recordFrom(ctx); rec != nil && m != nil {
		rec.objNamespace, rec.objName = m.GetNamespace(), m.GetName()
		rec.objUID, rec.objRV = string(m.GetUID()), m.GetResourceVersion()
	}
}

// responseWriter records the status code of the response it wraps.
// Through Unwrap, http.ResponseController reaches the wrapped writer's
// Flush, Hijack and deadlines.
type responseWriter struct {
	http.ResponseWriter
	code int // the first final status written; 0 before
}

func (w *responseWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes the wrapped writer, when it can.
func (w *responseWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// SetReadDeadline sets the wrapped connection's read deadline; handlers
// that ask for it with a type assertion rather than a
// http.ResponseController find it here.
func (w *responseWriter) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(w.ResponseWriter).SetReadDeadline(t)
}

// SetWriteDeadline sets the wrapped connection's write deadline.
func (w *responseWriter) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
