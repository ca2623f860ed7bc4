package main

import (
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/edgeapi/edgeapi/auth/authn"
)

// The bound on concurrent watches of --max-watches and
// --max-watches-per-user. kube-apiserver has none (its priority and
// fairness counts watches only while they start); edgeapi bounds them
// because every watch holds a buffer and a goroutine of a small device's
// memory. Unlike the in-flight limits, system:masters is bounded too: the
// admin kubeconfig is in it, and so are the controllers that run with it.

// Their defaults come from --memory-limit (budgetFor): 1,024 and 512 at
// the default 128 MiB.

// watchLimit admits at most total watches at once, and at most perUser
// of one user (by name; requests without a user count under ""); past
// either it answers 429 TooManyRequests as a Status in the representation
// the request accepts, with Retry-After: 1. A bound of 0 is no bound. It
// is the API's Config.AdmitWatch: a watch that owns its connection
// outlives its handler, so no filter in front of the handler sees it end.
type watchLimit struct {
	writeError func(http.ResponseWriter, *http.Request, error)
	total      int
	perUser    int

	mu     sync.Mutex
	open   int
	byUser map[string]int
}

// newWatchLimit returns a watchLimit, or nil when both bounds are 0.
func newWatchLimit(total, perUser int, writeError func(http.ResponseWriter, *http.Request, error)) *watchLimit {
	if total == 0 && perUser == 0 {
		return nil
	}
	return &watchLimit{writeError: writeError, total: total, perUser: perUser, byUser: map[string]int{}}
}

// admit counts the watch r and returns the function that uncounts it, or
// writes the 429 to w and returns false.
func (l *watchLimit) admit(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	var name string
	if u, ok := authn.UserFrom(r.Context()); ok {
		name = u.GetName()
	}
	if err := l.acquire(name); err != nil {
		w.Header().Set("Retry-After", "1")
		l.writeError(w, r, err)
		return nil, false
	}
	return func() { l.release(name) }, true
}

// acquire counts a watch of user, or returns the 429 to answer.
func (l *watchLimit) acquire(user string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total > 0 && l.open >= l.total {
		return apierrors.NewTooManyRequests(fmt.Sprintf("Too many watches: the server serves at most %d at once, please try again later.", l.total), 1)
	}
	if l.perUser > 0 && l.byUser[user] >= l.perUser {
		return apierrors.NewTooManyRequests(fmt.Sprintf("Too many watches of user %q: at most %d at once, please try again later.", user, l.perUser), 1)
	}
	l.open++
	l.byUser[user]++
	return nil
}

// release uncounts a watch of user.
func (l *watchLimit) release(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byUser[user]--; l.byUser[user] == 0 {
		delete(l.byUser, user)
	}
}
