package authn

import (
	"context"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
)

// userKey is the context key of the authenticated user.
type userKey struct{}

// WithUser returns a copy of ctx that carries u.
func WithUser(ctx context.Context, u user.Info) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user stored by WithUser, and whether there is one.
func UserFrom(ctx context.Context) (user.Info, bool) {
	u, ok := ctx.Value(userKey{}).(user.Info)
	return u, ok
}

// Unauthorized returns kube-apiserver's answer to a request it cannot
// authenticate: a Status with reason Unauthorized, code 401 and the message
// "Unauthorized". The HTTP layer writes it with its content negotiation.
func Unauthorized() *apierrors.StatusError {
	return apierrors.NewUnauthorized("Unauthorized")
}

// WithAuthentication authenticates every request with a before it reaches
// next. A request that fails (an error, or no user because anonymous
// requests are off) goes to failed instead, which should write
// Unauthorized(). On success the request's context carries the user
// (UserFrom), and the Authorization and X-Remote-* headers are removed so
// that no later handler can read or forward the credentials.
//
// Over HTTP/2, a failed or anonymous request also gets "Connection: close",
// as kube-apiserver does so that an unauthenticated client cannot keep a
// connection open with many streams.
func WithAuthentication(next http.Handler, a Authenticator, failed http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.AuthenticateRequest(r)
		if err != nil || !ok {
			if r.ProtoMajor == 2 {
				w.Header().Set("Connection", "close")
			}
			failed.ServeHTTP(w, r)
			return
		}
		if r.ProtoMajor == 2 && isAnonymous(u) {
			w.Header().Set("Connection", "close")
		}
		r.Header.Del("Authorization")
		for name := range r.Header {
			if isRemoteUserHeader(name) {
				r.Header.Del(name)
			}
		}
		next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), u)))
	})
}

// isRemoteUserHeader reports whether name (canonical form) is one of the
// request-header authentication headers an authenticating proxy sets.
func isRemoteUserHeader(name string) bool {
	switch name {
	case "X-Remote-User", "X-Remote-Uid", "X-Remote-Group":
		return true
	}
	return strings.HasPrefix(name, "X-Remote-Extra-")
}

// isAnonymous reports whether u is system:anonymous or in
// system:unauthenticated.
func isAnonymous(u user.Info) bool {
	if u.GetName() == user.Anonymous {
		return true
	}
	for _, g := range u.GetGroups() {
		if g == user.AllUnauthenticated {
			return true
		}
	}
	return false
}
