package authn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The impersonation headers, in canonical form.
const (
	ImpersonateUserHeader        = "Impersonate-User"
	ImpersonateGroupHeader       = "Impersonate-Group"
	ImpersonateUIDHeader         = "Impersonate-Uid"
	ImpersonateExtraHeaderPrefix = "Impersonate-Extra-"
)

// Defaults of Impersonator's bounds. kube-apiserver has none besides the
// server's header size limit; these only refuse requests no client sends.
const (
	// DefaultMaxImpersonationValues bounds the values (user, groups, uid
	// and extras together) of one request.
	DefaultMaxImpersonationValues = 512
	// DefaultMaxImpersonationValueBytes bounds one value.
	DefaultMaxImpersonationValueBytes = 16 << 10
)

// Authorizer decides whether a user may do something. Impersonator asks it
// with the verb "impersonate"; its method is the one of k8s.io/apiserver's
// authorizer.Authorizer, so an RBAC authorizer written for that interface
// fits.
type Authorizer interface {
	Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return f(ctx, a)
}

// Impersonator applies the impersonation headers with kube-apiserver's
// rules. See Impersonate.
type Impersonator struct {
	Authorizer Authorizer
	// MaxValues and MaxValueBytes bound a request's impersonation values;
	// zero means the Default… values.
	MaxValues     int
	MaxValueBytes int
}

// impersonation is one thing a request asks to act as, and the attributes
// the requestor must be allowed to impersonate it with.
type impersonation struct {
	kind       string // ServiceAccount, User, Group, UserExtra or UID
	apiVersion string // "" for the core kinds, authentication.k8s.io/v1 for the others
	namespace  string
	name       string
	fieldPath  string // the extra key of a UserExtra
	header     string // the header it came from, for errors
}

// String formats i as kube-apiserver formats the object reference it builds,
// so the 400 message for a group without a user reads the same.
func (i impersonation) String() string {
	return fmt.Sprintf("{%s %s %s %s %s %s %s}", i.kind, i.namespace, i.name, "", i.apiVersion, "", i.fieldPath)
}

// Impersonate returns the user a request acts as. Without impersonation
// headers that is requestor, and impersonated is false.
//
// With headers, every requested user, service account, group, uid and extra
// value must be allowed with the verb impersonate on, in kube-apiserver's
// terms, the resources users, serviceaccounts (in the account's namespace),
// groups, uids and userextras/<key> (the last two in the API group
// authentication.k8s.io), each named by its value. Rules:
//   - Impersonate-User names the user; its first value counts. A name
//     system:serviceaccount:<ns>:<name> is the service account, whose groups
//     are system:serviceaccounts and system:serviceaccounts:<ns> unless
//     Impersonate-Group is given.
//   - Impersonate-Group (repeatable) sets the groups; Impersonate-Uid the uid;
//     Impersonate-Extra-<key> (repeatable) adds values to the extra <key>,
//     lowercased and %-unescaped.
//   - Any of them without Impersonate-User is a 400 BadRequest.
//   - The first value the requestor may not impersonate is a 403 Forbidden
//     worded as kube-apiserver words it; the values are checked in the order
//     user, groups, extras (by key), uid.
//   - The result is in system:authenticated unless it is system:anonymous
//     (then in system:unauthenticated) or the groups name either group.
//   - More than MaxValues values, or a value longer than MaxValueBytes, is a
//     400 BadRequest once the values before it were allowed, so a requestor
//     without the right gets kube-apiserver's 403 whatever the size.
//
// The error is a *apierrors.StatusError to write as the answer.
func (im *Impersonator) Impersonate(ctx context.Context, h http.Header, requestor user.Info) (u user.Info, impersonated bool, err error) {
	reqs, err := impersonationRequests(h)
	if err != nil || len(reqs) == 0 {
		return requestor, false, err
	}
	maxValues, maxBytes := im.MaxValues, im.MaxValueBytes
	if maxValues <= 0 {
		maxValues = DefaultMaxImpersonationValues
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxImpersonationValueBytes
	}
	groupsGiven := len(h[ImpersonateGroupHeader]) > 0
	out := &user.DefaultInfo{Groups: []string{}, Extra: map[string][]string{}}
	for i, req := range reqs {
		if i >= maxValues {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("too many impersonation values: %d, at most %d", len(reqs), maxValues))
		}
		attrs := &authorizer.AttributesRecord{
			User:            requestor,
			Verb:            "impersonate",
			Namespace:       req.namespace,
			Name:            req.name,
			ResourceRequest: true,
		}
		switch req.kind {
		case "ServiceAccount":
			attrs.Resource = "serviceaccounts"
			out.Name = serviceaccount.MakeUsername(req.namespace, req.name)
			if !groupsGiven {
				out.Groups = serviceaccount.MakeGroupNames(req.namespace)
			}
		case "User":
			attrs.Resource = "users"
			out.Name = req.name
		case "Group":
			attrs.Resource = "groups"
			out.Groups = append(out.Groups, req.name)
		case "UserExtra":
			attrs.APIGroup, attrs.APIVersion = "authentication.k8s.io", "v1"
			attrs.Resource, attrs.Subresource = "userextras", req.fieldPath
			out.Extra[req.fieldPath] = append(out.Extra[req.fieldPath], req.name)
		case "UID":
			attrs.APIGroup, attrs.APIVersion = "authentication.k8s.io", "v1"
			attrs.Resource = "uids"
			out.UID = req.name
		}
		decision, reason, authzErr := im.Authorizer.Authorize(ctx, attrs)
		if authzErr != nil || decision != authorizer.DecisionAllow {
			return nil, false, forbidden(attrs, reason)
		}
		if len(req.name) > maxBytes {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("%s value is %d bytes, at most %d", req.header, len(req.name), maxBytes))
		}
	}
	if out.Name != user.Anonymous {
		if !hasGroup(out.Groups, user.AllAuthenticated) && !hasGroup(out.Groups, user.AllUnauthenticated) {
			out.Groups = append(out.Groups, user.AllAuthenticated)
		}
	} else if !hasGroup(out.Groups, user.AllUnauthenticated) {
		out.Groups = append(out.Groups, user.AllUnauthenticated)
	}
	return out, true, nil
}

// impersonationRequests lists what the headers ask to act as, in the order
// they are authorized, or a 400 when they name groups, extras or a uid but
// no user.
func impersonationRequests(h http.Header) ([]impersonation, error) {
	var reqs []impersonation
	name := h.Get(ImpersonateUserHeader)
	hasUser := name != ""
	if hasUser {
		if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
			reqs = append(reqs, impersonation{kind: "ServiceAccount", namespace: ns, name: sa, header: ImpersonateUserHeader})
		} else {
			reqs = append(reqs, impersonation{kind: "User", name: name, header: ImpersonateUserHeader})
		}
	}
	groups := h[ImpersonateGroupHeader]
	for _, g := range groups {
		reqs = append(reqs, impersonation{kind: "Group", name: g, header: ImpersonateGroupHeader})
	}
	// kube-apiserver walks the header map in Go's random order; sorting
	// makes the first refused extra the same on every try.
	var extraHeaders []string
	for header := range h {
		if strings.HasPrefix(header, ImpersonateExtraHeaderPrefix) {
			extraHeaders = append(extraHeaders, header)
		}
	}
	sort.Strings(extraHeaders)
	for _, header := range extraHeaders {
		key := extraKey(header[len(ImpersonateExtraHeaderPrefix):])
		for _, v := range h[header] {
			reqs = append(reqs, impersonation{kind: "UserExtra", apiVersion: "authentication.k8s.io/v1", name: v, fieldPath: key, header: header})
		}
	}
	uid := h.Get(ImpersonateUIDHeader)
	if uid != "" {
		reqs = append(reqs, impersonation{kind: "UID", apiVersion: "authentication.k8s.io/v1", name: uid, header: ImpersonateUIDHeader})
	}
	if !hasUser && (len(groups) > 0 || len(extraHeaders) > 0 || uid != "") {
		parts := make([]string, len(reqs))
		for i, r := range reqs {
			parts[i] = r.String()
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested [%s] without impersonating a user", strings.Join(parts, " ")))
	}
	return reqs, nil
}

// extraKey returns the extra key of an Impersonate-Extra-<key> header:
// lowercased, then %-unescaped when that is valid.
func extraKey(encoded string) string {
	lower := strings.ToLower(encoded)
	if key, err := url.PathUnescape(lower); err == nil {
		return key
	}
	return lower
}

// StripImpersonationHeaders removes every impersonation header from h, so
// that nothing after the impersonation step sees or forwards them.
func StripImpersonationHeaders(h http.Header) {
	for header := range h {
		if header == ImpersonateUserHeader || header == ImpersonateGroupHeader || header == ImpersonateUIDHeader ||
			strings.HasPrefix(header, ImpersonateExtraHeaderPrefix) {
			h.Del(header)
		}
	}
}

// WithImpersonation applies the impersonation headers of every request
// after WithAuthentication: the request goes on to next as the impersonated
// user (UserFrom), without impersonation headers, or failed is called with
// the *apierrors.StatusError to write (400 or 403).
func WithImpersonation(next http.Handler, im *Impersonator, failed func(w http.ResponseWriter, r *http.Request, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestor, ok := UserFrom(r.Context())
		if !ok {
			// Authentication did not run: nobody to impersonate for.
			failed(w, r, Unauthorized())
			return
		}
		u, impersonated, err := im.Impersonate(r.Context(), r.Header, requestor)
		if err != nil {
			failed(w, r, err)
			return
		}
		if !impersonated {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(WithUser(r.Context(), u))
		StripImpersonationHeaders(r.Header)
		next.ServeHTTP(w, r)
	})
}

// htmlEscaper escapes what kube-apiserver escapes in a 403 message.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// forbidden returns the 403 Status kube-apiserver answers when the requestor
// may not do attrs, with the authorizer's reason appended when it gave one.
func forbidden(attrs *authorizer.AttributesRecord, reason string) *apierrors.StatusError {
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	var msg string
	if attrs.Namespace != "" {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", attrs.User.GetName(), attrs.Verb, resource, attrs.APIGroup, attrs.Namespace)
	} else {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", attrs.User.GetName(), attrs.Verb, resource, attrs.APIGroup)
	}
	msg = htmlEscaper.Replace(msg)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, fmt.Errorf("%s", msg))
}

// hasGroup reports whether groups holds g.
func hasGroup(groups []string, g string) bool {
	for _, have := range groups {
		if have == g {
			return true
		}
	}
	return false
}
