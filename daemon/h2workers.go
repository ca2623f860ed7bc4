package main

import (
	"net/http"
	"strings"
	"sync"
)

// HTTP/2 requests on long-lived goroutines.
//
// Go's HTTP/2 server runs each request (stream) on a new goroutine, whose
// stack starts small and is grown and copied, several times, by the API's
// deep call chain: a fifth of the daemon's CPU for gets over client-go's
// HTTP/2 connection. HTTP/1.1 reuses its connection's goroutine, whose
// stack is already grown. h2Workers hands short HTTP/2 requests to a few
// goroutines that keep their stacks between requests; when all are busy
// the request runs where it is, as before. Watches, which run for
// minutes, never take a worker.

// h2WorkerCount is how many HTTP/2 requests run on workers at once.
const h2WorkerCount = 32

type h2Job struct {
	w     http.ResponseWriter
	r     *http.Request
	done  chan struct{}
	panic any
}

var h2JobPool = sync.Pool{New: func() any { return &h2Job{done: make(chan struct{}, 1)} }}

// h2Workers runs next on its workers; see above. Start them with start,
// stop them with stop once no request can arrive.
type h2Workers struct {
	next http.Handler
	jobs chan *h2Job // unbuffered: a send succeeds only to an idle worker
	quit chan struct{}
	wg   sync.WaitGroup
}

func newH2Workers(next http.Handler) *h2Workers {
	return &h2Workers{next: next, jobs: make(chan *h2Job), quit: make(chan struct{})}
}

// start starts the workers.
func (p *h2Workers) start() {
	for range h2WorkerCount {
		p.wg.Add(1)
		go p.work()
	}
}

// stop ends the workers once they finish what they serve, and waits for
// them; requests that come later run on their own goroutines.
func (p *h2Workers) stop() {
	close(p.quit)
	p.wg.Wait()
}

func (p *h2Workers) work() {
	defer p.wg.Done()
	for {
		select {
		case j := <-p.jobs:
			p.run(j)
		case <-p.quit:
			return
		}
	}
}

// run serves j and reports a panic to the request's own goroutine, which
// panics again there, so net/http handles it as it would have.
func (p *h2Workers) run(j *h2Job) {
	defer func() {
		j.panic = recover()
		j.done <- struct{}{}
	}()
	p.next.ServeHTTP(j.w, j.r)
}

// ServeHTTP implements http.Handler.
func (p *h2Workers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || longRunning(r) {
		p.next.ServeHTTP(w, r)
		return
	}
	j := h2JobPool.Get().(*h2Job)
	j.w, j.r = w, r
	select {
	case p.jobs <- j:
		<-j.done
	default:
		j.w, j.r = nil, nil
		h2JobPool.Put(j)
		p.next.ServeHTTP(w, r)
		return
	}
	v := j.panic
	j.w, j.r, j.panic = nil, nil, nil
	h2JobPool.Put(j)
	if v != nil {
		panic(v)
	}
}

// longRunning reports whether r may be a watch.
func longRunning(r *http.Request) bool {
	return strings.Contains(r.URL.RawQuery, "watch") || strings.Contains(r.URL.Path, "/watch/")
}
