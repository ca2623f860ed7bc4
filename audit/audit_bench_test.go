package audit

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// benchWriter is a ResponseWriter that keeps nothing, so that the
// benchmarks measure the filter rather than a recorder.
type benchWriter struct{ h http.Header }

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(int)             {}

// BenchmarkWithAudit measures what the audit filter adds to a request, as
// the daemon wires it (the filter, the user and impersonated-user hooks):
// "off" is the same chain without any of them; "read" a GET that is not
// logged; "write" a POST whose event is written to a file.
func BenchmarkWithAudit(b *testing.B) {
	admin := &user.DefaultInfo{Name: "admin", UID: "1", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetAuthorizationDecision(r.Context(), true, "")
		w.WriteHeader(http.StatusCreated)
	})
	chain := func(l *Logger) http.Handler {
		h := http.Handler(handler)
		if l != nil {
			h = WithImpersonatedUser(h, testUserFrom)
		}
		if l != nil {
			h = WithUser(h, testUserFrom)
		}
		authenticated := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			authenticated.ServeHTTP(w, r.WithContext(withTestUser(r.Context(), admin)))
		})
		if l != nil {
			h = l.WithAudit(h)
		}
		return h
	}
	run := func(b *testing.B, h http.Handler, method string) {
		r := httptest.NewRequest(method, "http://edgeapi.test/api/v1/namespaces/default/configmaps", nil)
		r.Header.Set("User-Agent", "kubectl/v1.36.0 (linux/amd64) kubernetes/abcdef")
		r.RemoteAddr = "127.0.0.1:50000"
		w := &benchWriter{h: http.Header{}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	}
	newLogger := func(b *testing.B) *Logger {
		l, err := New(Config{Path: filepath.Join(b.TempDir(), "audit.log"), MaxSize: 100 << 20, Attributes: testAttributes})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	b.Run("off", func(b *testing.B) { run(b, chain(nil), http.MethodPost) })
	b.Run("read", func(b *testing.B) { run(b, chain(newLogger(b)), http.MethodGet) })
	b.Run("write", func(b *testing.B) { run(b, chain(newLogger(b)), http.MethodPost) })
}
