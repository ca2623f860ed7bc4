package main

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// invalidTimeout begins kube-apiserver's 400 for a timeout query
// parameter that is not a Go duration.
const invalidTimeout = "invalid timeout specified in the request URL"

// withRequestDeadline returns next behind kube-apiserver's request
// deadline (--request-timeout): a request that is not long-running (every
// request but a watch, and edgeapi's backup download, whose size is the
// database's) runs under a context that ends max after it
// arrived, or earlier when its timeout query parameter (a Go duration, as
// kubectl's --request-timeout sends) asks for less. Past the deadline the
// store gives up and the request gets 504 Timeout, as kube-apiserver
// answers it; a response already under way is cut off. A timeout
// parameter that is not a duration gets 400 in the representation the
// client asked for (writeError). max <= 0 returns next unchanged.
func withRequestDeadline(next http.Handler, max time.Duration, writeError func(http.ResponseWriter, *http.Request, error)) http.Handler {
	if max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWatch(r) || r.URL.Path == backupPath {
			next.ServeHTTP(w, r)
			return
		}
		timeout := max
		if v, ok := timeoutParam(r.URL.RawQuery); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				writeError(w, r, apierrors.NewBadRequest(invalidTimeout+" - "+err.Error()))
				return
			}
			if d > 0 && d < max {
				timeout = d
			}
		}
		ctx, cancel := newLazyDeadline(r.Context(), time.Now().Add(timeout))
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// timeoutParam is the first value of the timeout query parameter in the
// raw query q, as url.Values.Get would give it (a value that does not
// unescape is skipped, as url.ParseQuery skips it); ok is false when it
// is absent or empty. It allocates only for escaped keys or values.
func timeoutParam(q string) (string, bool) {
	if !strings.Contains(q, "timeout") && !strings.Contains(q, "%") {
		return "", false
	}
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if strings.Contains(pair, ";") {
			continue // url.ParseQuery refuses it
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != "timeout" {
			continue
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			continue
		}
		return v, v != ""
	}
	return "", false
}
