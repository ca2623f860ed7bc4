package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fakeServeMain implements `bench serve --data-dir DIR --insecure-listen ADDR`: an
// in-memory stand-in for the daemon that serves just what the workloads use
// (namespaces create; ConfigMaps create, get, put, list, watch; /readyz;
// /debug/edgeapi/stats). It exists to test this tool end to end, including
// starting and stopping a daemon, and to measure the generator's own cost
// against a server that does almost nothing. It keeps nothing on disk.
func fakeServeMain(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "ignored except that it is created")
	listen := fs.String("listen", "127.0.0.1:0", "ignored: the daemon's HTTPS address")
	insecure := fs.String("insecure-listen", "127.0.0.1:0", "address to serve plain HTTP on (loopback)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	_ = *listen
	if *dataDir != "" {
		if err := os.MkdirAll(*dataDir, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, "fake serve:", err)
			return 1
		}
	}
	srv := &http.Server{Addr: *insecure, Handler: newFakeServer().routes()}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "fake serve:", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx) // watches end on their request contexts
	return 0
}

type fakeServer struct {
	mu sync.Mutex // guards every field below
	// rev is the last revision handed out.
	rev int64
	// objs maps namespace → name → stored JSON (resourceVersion stamped).
	objs map[string]map[string][]byte
	// watchers maps namespace → each watch's event channel.
	watchers map[string]map[chan []byte]struct{}
	writes   int64
}

func newFakeServer() *fakeServer {
	return &fakeServer{
		objs:     map[string]map[string][]byte{},
		watchers: map[string]map[chan []byte]struct{}{},
	}
}

func (s *fakeServer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		writes := s.writes
		s.mu.Unlock()
		if r.URL.Query().Has("verbose") {
			fmt.Fprintf(w, "[+]fake ok (writes=%d)\nreadyz check passed\n", writes)
			return
		}
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /debug/edgeapi/stats", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		// One write per "batch": the fake has no group commit.
		fmt.Fprintf(w, `{"store":{"rev":%d,"writes":%d,"batches":%d}}`, s.rev, s.writes, s.writes)
	})
	mux.HandleFunc("POST /api/v1/namespaces", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(b)
	})
	mux.HandleFunc("POST /api/v1/namespaces/{ns}/configmaps", s.create)
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/configmaps", s.list)
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/configmaps/{name}", s.get)
	mux.HandleFunc("PUT /api/v1/namespaces/{ns}/configmaps/{name}", s.update)
	mux.HandleFunc("PATCH /api/v1/namespaces/{ns}/configmaps/{name}", s.patch)
	return mux
}

func fakeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"message":%q,"code":%d}`, reason, msg, code)
}

// decode reads a ConfigMap and returns it with its metadata map.
func fakeDecode(r *http.Request) (map[string]any, map[string]any, error) {
	var obj map[string]any
	if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
		return nil, nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return nil, nil, errors.New("no metadata")
	}
	return obj, md, nil
}

// commitLocked stores obj at the next revision and sends the event to the
// namespace's watchers, dropping watchers that fall too far behind.
func (s *fakeServer) commitLocked(ns, name, typ string, obj, md map[string]any) []byte {
	s.rev++
	s.writes++
	md["resourceVersion"] = strconv.FormatInt(s.rev, 10)
	md["namespace"] = ns
	b, _ := json.Marshal(obj)
	if s.objs[ns] == nil {
		s.objs[ns] = map[string][]byte{}
	}
	s.objs[ns][name] = b
	if ws := s.watchers[ns]; len(ws) > 0 {
		ev := make([]byte, 0, len(b)+32)
		ev = append(ev, `{"type":"`+typ+`","object":`...)
		ev = append(ev, b...)
		ev = append(ev, "}\n"...)
		for ch := range ws {
			select {
			case ch <- ev:
			default:
				delete(ws, ch)
				close(ch)
			}
		}
	}
	return b
}

func (s *fakeServer) create(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	obj, md, err := fakeDecode(r)
	if err != nil {
		fakeStatus(w, 400, "BadRequest", err.Error())
		return
	}
	name, _ := md["name"].(string)
	s.mu.Lock()
	if _, ok := s.objs[ns][name]; ok {
		s.mu.Unlock()
		fakeStatus(w, 409, "AlreadyExists", "configmaps "+name+" already exists")
		return
	}
	b := s.commitLocked(ns, name, "ADDED", obj, md)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
}

func (s *fakeServer) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.objs[r.PathValue("ns")][r.PathValue("name")]
	s.mu.Unlock()
	if !ok {
		fakeStatus(w, 404, "NotFound", "not found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *fakeServer) update(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	obj, md, err := fakeDecode(r)
	if err != nil {
		fakeStatus(w, 400, "BadRequest", err.Error())
		return
	}
	rv, _ := md["resourceVersion"].(string)
	s.mu.Lock()
	old, ok := s.objs[ns][name]
	if !ok {
		s.mu.Unlock()
		fakeStatus(w, 404, "NotFound", "not found")
		return
	}
	if rv != "" && !bytes.Contains(old, []byte(`"resourceVersion":"`+rv+`"`)) {
		s.mu.Unlock()
		fakeStatus(w, 409, "Conflict", "the object has been modified")
		return
	}
	b := s.commitLocked(ns, name, "MODIFIED", obj, md)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// patch merges the body's data into the stored object; an apply patch
// creates the object when there is none. Enough for the patch and apply
// workloads, not a real merge.
func (s *fakeServer) patch(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var p map[string]any
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		fakeStatus(w, 400, "BadRequest", err.Error())
		return
	}
	apply := r.Header.Get("Content-Type") == "application/apply-patch+yaml"
	if apply && r.URL.Query().Get("fieldManager") == "" {
		fakeStatus(w, 422, "Invalid", "fieldManager is required for apply patch")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objs[ns][name]
	typ := "MODIFIED"
	var obj map[string]any
	switch {
	case ok:
		_ = json.Unmarshal(old, &obj)
	case apply:
		obj, typ = map[string]any{"metadata": map[string]any{"name": name}}, "ADDED"
	default:
		fakeStatus(w, 404, "NotFound", "not found")
		return
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	pd, _ := p["data"].(map[string]any)
	for k, v := range pd {
		data[k] = v
	}
	obj["data"] = data
	b := s.commitLocked(ns, name, typ, obj, obj["metadata"].(map[string]any))
	w.Header().Set("Content-Type", "application/json")
	if typ == "ADDED" {
		w.WriteHeader(http.StatusCreated)
	}
	w.Write(b)
}

func (s *fakeServer) list(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	if q := r.URL.Query(); q.Get("watch") == "1" || q.Get("watch") == "true" {
		s.watch(w, r, ns)
		return
	}
	s.mu.Lock()
	names := make([]string, 0, len(s.objs[ns]))
	for n := range s.objs[ns] {
		names = append(names, n)
	}
	sort.Strings(names)
	// Paging: the continue token is the last name returned.
	cont := ""
	if after := r.URL.Query().Get("continue"); after != "" {
		i := sort.SearchStrings(names, after)
		for i < len(names) && names[i] <= after {
			i++
		}
		names = names[i:]
	}
	if limit, _ := strconv.Atoi(r.URL.Query().Get("limit")); limit > 0 && len(names) > limit {
		names = names[:limit]
		cont = names[limit-1]
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"%d","continue":%q},"items":[`, s.rev, cont)
	for i, n := range names {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(s.objs[ns][n])
	}
	s.mu.Unlock()
	buf.WriteString("]}")
	w.Header().Set("Content-Type", "application/json")
	w.Write(buf.Bytes())
}

// watch streams events committed after it registers; it ignores
// resourceVersion, which is enough for a benchmark whose writer starts after
// its watchers.
func (s *fakeServer) watch(w http.ResponseWriter, r *http.Request, ns string) {
	ch := make(chan []byte, 4096)
	s.mu.Lock()
	if s.watchers[ns] == nil {
		s.watchers[ns] = map[chan []byte]struct{}{}
	}
	s.watchers[ns][ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if _, ok := s.watchers[ns][ch]; ok {
			delete(s.watchers[ns], ch)
			close(ch)
		}
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			w.Write(ev)
			if len(ch) == 0 {
				fl.Flush()
			}
		}
	}
}
