package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// testAttributes is a small stand-in for httpapi.RequestAttributes: paths
// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] and
// /apis/GROUP/VERSION/..., with the verbs kube-apiserver derives from the
// method.
func testAttributes(r *http.Request) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		a.APIVersion, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		a.APIGroup, a.APIVersion, parts = parts[1], parts[2], parts[3:]
	default:
		return a
	}
	a.ResourceRequest = true
	if parts[0] == "namespaces" && len(parts) > 2 {
		a.Namespace, parts = parts[1], parts[2:]
	}
	a.Resource = parts[0]
	if len(parts) > 1 {
		a.Name = parts[1]
	}
	if len(parts) > 2 {
		a.Subresource = parts[2]
	}
	switch r.Method {
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		a.Verb = "delete"
		if a.Name == "" {
			a.Verb = "deletecollection"
		}
	case http.MethodGet, http.MethodHead:
		a.Verb = "get"
		if a.Name == "" {
			a.Verb = "list"
			if r.URL.Query().Get("watch") == "1" {
				a.Verb = "watch"
			}
		}
	}
	return a
}

// userKey and the functions below stand in for authn's context user.
type userKey struct{}

func withTestUser(ctx context.Context, u user.Info) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

func testUserFrom(ctx context.Context) (user.Info, bool) {
	u, ok := ctx.Value(userKey{}).(user.Info)
	return u, ok
}

// testChain is the daemon's chain in small: audit, then authentication
// (bearer tokens "admin" and "nobody"; others 401), the user hook,
// impersonation (any Impersonate-User is allowed), the impersonated-user
// hook, and h.
func testChain(l *Logger, h http.Handler) http.Handler {
	inner := WithImpersonatedUser(h, testUserFrom)
	impersonation := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get("Impersonate-User"); name != "" {
			r.Header.Del("Impersonate-User")
			r = r.WithContext(withTestUser(r.Context(), &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}))
		}
		inner.ServeHTTP(w, r)
	})
	withUser := WithUser(impersonation, testUserFrom)
	authentication := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var u user.Info
		switch r.Header.Get("Authorization") {
		case "Bearer admin":
			u = &user.DefaultInfo{Name: "admin", UID: "1", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}, Extra: map[string][]string{"scopes": {"a", "b"}}}
		case "Bearer nobody":
			u = &user.DefaultInfo{Name: "nobody", Groups: []string{user.AllAuthenticated}}
		default:
			SetResponseStatus(r.Context(), &metav1.Status{Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: 401})
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		withUser.ServeHTTP(w, r.WithContext(withTestUser(r.Context(), u)))
	})
	return l.WithAudit(authentication)
}

// newTestLogger returns a Logger writing to a file in a new directory, and
// the file's path.
func newTestLogger(t *testing.T, cfg Config) (*Logger, string) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "audit.log")
	}
	if cfg.Attributes == nil {
		cfg.Attributes = testAttributes
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, cfg.Path
}

// readLines returns the lines of the file at path.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
}

// decodeKube decodes line into kube-apiserver's own Event type, failing on
// any field that type does not have.
func decodeKube(t *testing.T, line string) *auditv1.Event {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var ev auditv1.Event
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("decode %s as audit.k8s.io/v1 Event: %v", line, err)
	}
	return &ev
}

type request struct {
	method, path string
	header       map[string]string
}

// serve sends req through h and returns the response.
func serve(h http.Handler, req request) *http.Response {
	r := httptest.NewRequest(req.method, "http://edgeapi.test"+req.path, nil)
	r.RemoteAddr = "192.0.2.7:40000"
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// TestLogger_WithAudit_EventShape: a create through the whole chain, with
// impersonation, is one line that decodes strictly into kube-apiserver's
// Event type and re-encodes to the same bytes (same field names, order and
// omissions), with the values kube-apiserver would log.
func TestLogger_WithAudit_EventShape(t *testing.T) {
	received := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	clock := []time.Time{received, received.Add(1500 * time.Microsecond)}
	l, path := newTestLogger(t, Config{Now: func() time.Time {
		now := clock[0]
		if len(clock) > 1 {
			clock = clock[1:]
		}
		return now
	}})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetAuthorizationDecision(r.Context(), true, `RBAC: allowed by ClusterRoleBinding "x"`)
		SetObjectMeta(r.Context(), &metav1.ObjectMeta{Name: "cm1", UID: "uid-1", ResourceVersion: "7"})
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"kind":"ConfigMap"}`)
	}))
	resp := serve(h, request{method: "POST", path: "/api/v1/namespaces/ns1/configmaps?fieldManager=a<b", header: map[string]string{
		"Authorization":    "Bearer admin",
		"Impersonate-User": "alice",
		"User-Agent":       "kubectl/v1.36.0",
		"X-Forwarded-For":  "198.51.100.1, 198.51.100.2",
	}})
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	kube := decodeKube(t, lines[0])
	again, err := json.Marshal(kube)
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's serializer, like json.Encoder, escapes < > &.
	if got, want := lines[0], string(again); got != want {
		t.Errorf("line re-encoded from kube's Event differs:\n got %s\nwant %s", got, want)
	}
	want := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + resp.Header.Get("Audit-ID") + `",` +
		`"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns1/configmaps?fieldManager=a\u003cb","verb":"create",` +
		`"user":{"username":"admin","uid":"1","groups":["system:masters","system:authenticated"],"extra":{"scopes":["a","b"]}},` +
		`"impersonatedUser":{"username":"alice","groups":["system:authenticated"]},` +
		`"sourceIPs":["198.51.100.1","198.51.100.2","192.0.2.7"],"userAgent":"kubectl/v1.36.0",` +
		`"objectRef":{"resource":"configmaps","namespace":"ns1","name":"cm1","uid":"uid-1","apiVersion":"v1","resourceVersion":"7"},` +
		`"responseStatus":{"metadata":{},"code":201},` +
		`"requestReceivedTimestamp":"2026-11-25T10:00:00.123456Z","stageTimestamp":"2026-11-25T10:00:00.124956Z",` +
		`"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"x\""}}`
	if lines[0] != want {
		t.Errorf("event:\n got %s\nwant %s", lines[0], want)
	}
	if strings.Contains(lines[0], "Bearer") || strings.Contains(lines[0], "ConfigMap") {
		t.Errorf("event holds the credentials or the body: %s", lines[0])
	}
}

// TestLogger_WithAudit_Logged: writes are logged whatever their outcome,
// and so is every 401 and 403; reads and other requests that were not
// refused are not.
func TestLogger_WithAudit_Logged(t *testing.T) {
	tests := []struct {
		method, path string
		token        string
		code         int
		wantVerb     string // "" when not logged
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/a", "admin", 200, ""},
		{"HEAD", "/api/v1/namespaces/ns/configmaps/a", "admin", 200, ""},
		{"GET", "/api/v1/namespaces/ns/configmaps", "admin", 200, ""},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=1", "admin", 200, ""},
		{"GET", "/api/v1/namespaces/ns/configmaps/a", "admin", 404, ""},
		{"GET", "/version", "admin", 200, ""},
		{"POST", "/apis/example.com/v1/things", "admin", 404, "create"},
		{"POST", "/api/v1/namespaces/ns/configmaps", "admin", 201, "create"},
		{"POST", "/api/v1/namespaces/ns/configmaps", "admin", 409, "create"},
		{"PUT", "/api/v1/namespaces/ns/configmaps/a", "admin", 200, "update"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/a", "admin", 422, "patch"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/a", "admin", 200, "delete"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "admin", 200, "deletecollection"},
		{"POST", "/api/v1/namespaces/ns/pods/p/eviction", "admin", 201, "create"},
		{"POST", "/not-an-api", "admin", 404, ""},
		{"OPTIONS", "/api/v1/namespaces/ns/configmaps", "admin", 405, ""},
		{"GET", "/api/v1/namespaces/ns/secrets/s", "nobody", 403, "get"},
		{"GET", "/api/v1/namespaces/ns/secrets?watch=1", "nobody", 403, "watch"},
		{"GET", "/version", "nobody", 403, "get"},
		{"GET", "/api/v1/namespaces/ns/secrets", "wrong", 401, "list"},
		{"POST", "/not-an-api", "wrong", 401, "post"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %d", tt.method, tt.path, tt.code), func(t *testing.T) {
			l, path := newTestLogger(t, Config{})
			h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.code)
			}))
			resp := serve(h, request{method: tt.method, path: tt.path, header: map[string]string{"Authorization": "Bearer " + tt.token}})
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.code)
			}
			lines := readLines(t, path)
			if tt.wantVerb == "" {
				if len(lines) != 0 {
					t.Fatalf("logged %s, want nothing", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("got %d lines, want 1", len(lines))
			}
			ev := decodeKube(t, lines[0])
			if ev.Verb != tt.wantVerb || ev.ResponseStatus == nil || ev.ResponseStatus.Code != int32(tt.code) {
				t.Errorf("verb %q, responseStatus %+v; want verb %q and code %d", ev.Verb, ev.ResponseStatus, tt.wantVerb, tt.code)
			}
		})
	}
}

// TestLogger_WithAudit_FailedAuthentication: a request that fails
// authentication is logged as kube-apiserver logs it: stage
// ResponseStarted, no user, the Unauthorized Status.
func TestLogger_WithAudit_FailedAuthentication(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.NotFoundHandler())
	resp := serve(h, request{method: "DELETE", path: "/api/v1/namespaces/ns/secrets/s", header: map[string]string{"Authorization": "Bearer forged"}})
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	if !strings.Contains(lines[0], `"user":{}`) {
		t.Errorf("user of a failed authentication is not {}: %s", lines[0])
	}
	ev := decodeKube(t, lines[0])
	got := fmt.Sprintf("%s %s %s %+v impersonated=%v", ev.Stage, ev.Verb, ev.AuditID, *ev.ResponseStatus, ev.ImpersonatedUser != nil)
	want := fmt.Sprintf("ResponseStarted delete %s %+v impersonated=false", resp.Header.Get("Audit-Id"),
		metav1.Status{Status: "Failure", Message: "Unauthorized", Reason: "Unauthorized", Code: 401})
	if got != want {
		t.Errorf("event: got %s, want %s", got, want)
	}
}

// TestLogger_WithAudit_Forbidden: a refused request carries the Status it
// was answered with and the authorizer's decision.
func TestLogger_WithAudit_Forbidden(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetAuthorizationDecision(r.Context(), false, "")
		SetResponseStatus(r.Context(), &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: 403,
			Message: `secrets "s" is forbidden: User "nobody" cannot get resource "secrets" in API group "" in the namespace "ns"`,
			Details: &metav1.StatusDetails{Name: "s", Kind: "secrets"},
		})
		w.WriteHeader(http.StatusForbidden)
	}))
	serve(h, request{method: "GET", path: "/api/v1/namespaces/ns/secrets/s", header: map[string]string{"Authorization": "Bearer nobody"}})
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	want := `"responseStatus":{"metadata":{},"status":"Failure","message":"secrets \"s\" is forbidden: User \"nobody\" cannot get resource \"secrets\" in API group \"\" in the namespace \"ns\"","reason":"Forbidden","details":{"name":"s","kind":"secrets"},"code":403}`
	if !strings.Contains(lines[0], want) {
		t.Errorf("event %s\nlacks %s", lines[0], want)
	}
	if want := `"annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}`; !strings.Contains(lines[0], want) {
		t.Errorf("event %s\nlacks %s", lines[0], want)
	}
	ev := decodeKube(t, lines[0])
	if ev.User.Username != "nobody" || ev.Stage != auditv1.StageResponseComplete || ev.ImpersonatedUser != nil {
		t.Errorf("user %q, stage %s, impersonatedUser %v; want nobody, ResponseComplete, none", ev.User.Username, ev.Stage, ev.ImpersonatedUser)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestLogger_WithAudit_AuditID: every response carries an Audit-ID, logged
// or not: a new random UUID, or the one the request sent.
func TestLogger_WithAudit_AuditID(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	seen := map[string]bool{}
	for range 100 {
		id := serve(h, request{method: "GET", path: "/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer admin"}}).Header.Get("Audit-ID")
		if !uuidV4.MatchString(id) {
			t.Fatalf("Audit-ID %q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("Audit-ID %q given twice", id)
		}
		seen[id] = true
	}
	resp := serve(h, request{method: "POST", path: "/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer admin", "Audit-ID": "client-chosen"}})
	if got := resp.Header.Get("Audit-ID"); got != "client-chosen" {
		t.Errorf("Audit-ID = %q, want the request's client-chosen", got)
	}
	lines := readLines(t, path)
	if len(lines) != 1 || decodeKube(t, lines[0]).AuditID != "client-chosen" {
		t.Errorf("log %q, want one event with auditID client-chosen", lines)
	}
}

// TestLogger_WithAudit_UserAgent: a user agent longer than 1024 bytes is
// cut as kube-apiserver cuts it.
func TestLogger_WithAudit_UserAgent(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	serve(h, request{method: "DELETE", path: "/api/v1/namespaces/x", header: map[string]string{"Authorization": "Bearer admin", "User-Agent": strings.Repeat("u", 5000)}})
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	if got, want := decodeKube(t, lines[0]).UserAgent, strings.Repeat("u", 1024)+"...TRUNCATED"; got != want {
		t.Errorf("userAgent has %d bytes, want %d", len(got), len(want))
	}
}

// TestLogger_WithAudit_Panic: a write whose handler panics is logged with
// the stage Panic and a 500, and the panic goes on to net/http.
func TestLogger_WithAudit_Panic(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") }))
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		serve(h, request{method: "POST", path: "/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer admin"}})
	}()
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	ev := decodeKube(t, lines[0])
	if ev.Stage != auditv1.StagePanic || ev.ResponseStatus.Code != 500 || ev.ResponseStatus.Message != "APIServer panic'd: boom" {
		t.Errorf("stage %s, responseStatus %+v; want Panic, 500, APIServer panic'd: boom", ev.Stage, ev.ResponseStatus)
	}
}

// TestLogger_WithAudit_ResponseWriter: behind the filter, a handler still
// reaches the connection: deadlines (also by type assertion, as httpapi
// bounds request bodies), flushing and hijacking.
func TestLogger_WithAudit_ResponseWriter(t *testing.T) {
	l, _ := newTestLogger(t, Config{})
	errs := make(chan error, 1)
	srv := httptest.NewServer(l.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd, ok := w.(interface{ SetReadDeadline(time.Time) error })
		if !ok {
			errs <- fmt.Errorf("no SetReadDeadline on %T", w)
			return
		}
		rc := http.NewResponseController(w)
		if err := rd.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			errs <- fmt.Errorf("SetReadDeadline: %w", err)
			return
		}
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			errs <- fmt.Errorf("SetWriteDeadline: %w", err)
			return
		}
		if err := rc.Flush(); err != nil {
			errs <- fmt.Errorf("Flush: %w", err)
			return
		}
		errs <- nil
		// Flushed: the header is out; take the connection over.
		conn, brw, err := rc.Hijack()
		if err != nil {
			panic(err)
		}
		brw.WriteString("0\r\n\r\n")
		brw.Flush()
		conn.Close()
	})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Audit-ID") == "" {
		t.Error("no Audit-ID header")
	}
}

// TestLogger_WithAudit_Concurrent: requests logged from many goroutines
// while the file rotates give whole lines, none lost.
func TestLogger_WithAudit_Concurrent(t *testing.T) {
	dir := t.TempDir()
	l, path := newTestLogger(t, Config{Path: filepath.Join(dir, "audit.log"), MaxSize: 8 << 10})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	ids := make(chan string, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				resp := serve(h, request{method: "POST", path: fmt.Sprintf("/api/v1/namespaces/ns%d/configmaps", g), header: map[string]string{
					"Authorization": "Bearer admin", "Audit-ID": fmt.Sprintf("g%d-%d", g, i),
				}})
				ids <- resp.Header.Get("Audit-ID")
			}
		}()
	}
	wg.Wait()
	close(ids)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "audit*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("files %v: the log never rotated", files)
	}
	logged := map[string]int{}
	for _, f := range files {
		for _, line := range readLines(t, f) {
			logged[string(decodeKube(t, line).AuditID)]++
		}
	}
	for id := range ids {
		if logged[id] != 1 {
			t.Errorf("event %s logged %d times, want once", id, logged[id])
		}
	}
	if got, want := len(logged), goroutines*each; got != want {
		t.Errorf("%d distinct events logged, want %d", got, want)
	}
	if l.Failed() != 0 {
		t.Errorf("Failed() = %d, want 0", l.Failed())
	}
	_ = path
}

// TestLogger_Close: events of requests that end after Close are counted,
// not written, and nothing panics.
func TestLogger_Close(t *testing.T) {
	l, path := newTestLogger(t, Config{})
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	resp := serve(h, request{method: "POST", path: "/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer admin"}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d after Close, want 200", resp.StatusCode)
	}
	if got := l.Failed(); got != 1 {
		t.Errorf("Failed() = %d, want 1", got)
	}
	if lines := readLines(t, path); len(lines) != 0 {
		t.Errorf("logged %q after Close", lines)
	}
}

// TestNew_Stdout: the path "-" writes to standard output.
func TestNew_Stdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	l, err := New(Config{Path: "-", Attributes: testAttributes})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	h := testChain(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	resp := serve(h, request{method: "POST", path: "/api/v1/namespaces", header: map[string]string{"Authorization": "Bearer admin"}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		t.Fatalf("read stdout: %v", err)
	}
	if got, want := string(decodeKube(t, string(bytes.TrimSpace(line))).AuditID), resp.Header.Get("Audit-ID"); got != want {
		t.Errorf("auditID on stdout %q, want %q", got, want)
	}
}

// TestNew_Errors: New refuses an empty path, a missing attributes function
// and negative limits, and reports a file it cannot open.
func TestNew_Errors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no path", Config{Attributes: testAttributes}, "no log path"},
		{"no attributes", Config{Path: filepath.Join(dir, "a.log")}, "no request attributes"},
		{"negative size", Config{Path: filepath.Join(dir, "a.log"), Attributes: testAttributes, MaxSize: -1}, "negative"},
		{"a directory", Config{Path: dir, Attributes: testAttributes}, "open audit log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.cfg)
			if err == nil {
				l.Close()
				t.Fatalf("New succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestEvent_AppendJSON: the hand-written encoding is encoding/json's, byte
// for byte, for events with every field and with strings that need
// escaping.
func TestEvent_AppendJSON(t *testing.T) {
	odd := "a\"b\\c\b\f\n\r\t\x00\x1f<>&\x7f é €\u2028\u2029\xff\xc3(𝄞"
	full := Event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: LevelMetadata, AuditID: odd, Stage: StageResponseComplete,
		RequestURI: "/api/v1/namespaces/" + odd, Verb: "create",
		User:             UserInfo{Username: odd, UID: "1", Groups: []string{"g1", odd}, Extra: map[string][]string{"z": {"1"}, "a": nil, odd: {}, "m": {odd, ""}}},
		ImpersonatedUser: &UserInfo{},
		SourceIPs:        []string{"::1", "10.0.0.1"}, UserAgent: odd,
		ObjectRef: &ObjectReference{Resource: "r", Namespace: "n", Name: odd, UID: "u", APIGroup: "g", APIVersion: "v", ResourceVersion: "7", Subresource: "s"},
		ResponseStatus: &metav1.Status{Status: "Failure", Message: odd, Reason: metav1.StatusReasonInvalid, Code: 422, Details: &metav1.StatusDetails{
			Name: odd, Kind: "k", Causes: []metav1.StatusCause{{Type: "FieldValueInvalid", Message: odd, Field: "data[<x>]"}},
		}},
		RequestReceivedTimestamp: metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("x", 3600))),
		StageTimestamp:           metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 6, 1000, time.UTC)),
		Annotations:              map[string]string{AnnotationReason: odd, AnnotationDecision: DecisionAllow, "b": ""},
	}
	tests := map[string]Event{
		"every field": full,
		"empty":       {},
		"sparse":      {Level: LevelMetadata, User: UserInfo{Groups: []string{}}, ObjectRef: &ObjectReference{}, ResponseStatus: &metav1.Status{}, Annotations: map[string]string{}},
	}
	for name, ev := range tests {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(&ev)
			if err != nil {
				t.Fatal(err)
			}
			if got := ev.appendJSON(nil); string(got) != string(want) {
				t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// FuzzAppendJSONString: any string is escaped as encoding/json escapes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href='x'>&</a>", "\x00\x01\u2028\xff\xfe", "é€𝄞", "\"\\/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
