package httpapi

import (
	"cmp"
	"compress/gzip"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// Response compression, as kube-apiserver's APIResponseCompression: a
// response whose body is larger than gzipThreshold goes out gzipped (level
// 1, Content-Encoding: gzip, Vary: Accept-Encoding) when the request's
// Accept-Encoding names gzip. Go's HTTP client, and so client-go and
// kubectl, asks for gzip on every request and decompresses on its own.
//
// kube-apiserver decides on the size of the first write, which for an
// object is the whole body; edgeapi's handlers also write an object in one
// write, and a streamed list gathers more than gzipThreshold before its
// first write (see flushWriter), so the same responses are compressed.
// Watches never are, nor the Extra handlers (metrics, backup).

// CompressionMode says which clients get large responses compressed.
type CompressionMode int

const (
	// CompressRemote compresses for clients that are not on the same
	// machine: not on a loopback address and not on a Unix socket. Moving
	// bytes through loopback costs less than compressing them, on both
	// sides: a 13 MiB list costs the daemon about 40 ms of CPU to gzip.
	CompressRemote CompressionMode = iota
	// CompressAll compresses for every client that asks, as
	// kube-apiserver does.
	CompressAll
	// CompressOff never compresses.
	CompressOff
)

// gzipThreshold is the body size above which a response is compressed:
// kube-apiserver's 128 KiB.
const gzipThreshold = 128 << 10

// gzipLevel is kube-apiserver's: level 1 costs the least CPU and
// compresses API objects within 1.1-1.5 times as well as the default.
const gzipLevel = gzip.BestSpeed

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzipLevel) // the level is valid
	return w
}}

var compressWriters = sync.Pool{New: func() any { return new(compressWriter) }}

// compressWriter decides at the first write of the body whether to gzip
// it. It holds the status code back until then, as the Content-Encoding
// header must precede it.
type compressWriter struct {
	http.ResponseWriter
	code    int
	decided bool
	gz      *gzip.Writer
}

// wantsCompression reports whether r may get a compressed response under
// mode: it asks for gzip, has a body to get, is not a watch (which may be
// a watch is left alone) and is not for an Extra handler.
func (s *Server) wantsCompression(r *http.Request) bool {
	if s.cfg.ResponseCompression == CompressOff || r.Method == http.MethodHead {
		return false
	}
	ae := r.Header.Get("Accept-Encoding")
	if ae == "" || !acceptsGzip(ae) {
		return false
	}
	if strings.Contains(r.URL.RawQuery, "watch") || strings.Contains(r.URL.Path, "/watch/") {
		return false
	}
	if _, ok := s.cfg.Extra[r.URL.Path]; ok {
		return false
	}
	return s.cfg.ResponseCompression == CompressAll || !localPeer(r.RemoteAddr)
}

// acceptsGzip reports whether an Accept-Encoding value lists gzip, read
// as kube-apiserver reads it: comma-separated tokens, one of which is
// exactly "gzip" once trimmed (a token with parameters, "gzip;q=0.5",
// does not count).
func acceptsGzip(v string) bool {
	for v != "" {
		var tok string
		tok, v, _ = strings.Cut(v, ",")
		if strings.TrimSpace(tok) == "gzip" {
			return true
		}
	}
	return false
}

// localPeer reports whether a request's RemoteAddr is on this machine: a
// loopback address, or not an address at all (a Unix socket's peer).
func localPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err != nil || a.Unmap().IsLoopback()
}

func newCompressWriter(w http.ResponseWriter) *compressWriter {
	cw := compressWriters.Get().(*compressWriter)
	cw.ResponseWriter = w
	return cw
}

// WriteHeader implements http.ResponseWriter; the code goes out at the
// first write, or at finish.
func (w *compressWriter) WriteHeader(code int) {
	if w.decided || w.code != 0 {
		return
	}
	w.code = code
}

// Write implements http.ResponseWriter.
func (w *compressWriter) Write(p []byte) (int, error) {
	if !w.decided {
		w.decide(len(p))
	}
	if w.gz != nil {
		return w.gz.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// decide sends the header, with Content-Encoding: gzip if the first write
// of the body, n bytes, is above the threshold.
func (w *compressWriter) decide(n int) {
	w.decided = true
	h := w.ResponseWriter.Header()
	if n > gzipThreshold && h.Get("Content-Encoding") == "" {
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		w.gz = gzipWriters.Get().(*gzip.Writer)
		w.gz.Reset(w.ResponseWriter)
	}
	w.ResponseWriter.WriteHeader(cmp.Or(w.code, http.StatusOK))
}

// expectBody tells w that the body to come is at least n bytes, for a
// response whose first write is smaller than the body it starts (a
// Protobuf list's head, then its items): above the threshold, it is
// compressed as if its first write were that large.
func (w *compressWriter) expectBody(n int) {
	if !w.decided && n > gzipThreshold {
		w.decide(n)
	}
}

// expectBody calls expectBody on w's compressWriter, if it has one (see
// compressWriter.expectBody); w may wrap it (echo's Response does).
func expectBody(w http.ResponseWriter, n int) {
	for w != nil {
		if cw, ok := w.(*compressWriter); ok {
			cw.expectBody(n)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// Flush implements http.Flusher. A flush before any body sends the
// header as it is, uncompressed: what follows has no first write to judge
// by.
func (w *compressWriter) Flush() {
	if !w.decided {
		w.decide(0)
	}
	if w.gz != nil {
		_ = w.gz.Flush() // a write error shows at the next write
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *compressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish ends the response: sends a status code still held back, or ends
// the gzip stream. w goes back to its pool.
func (w *compressWriter) finish() {
	switch {
	case w.gz != nil:
		_ = w.gz.Close() // the client sees a truncated body; nothing to tell it
		w.gz.Reset(nil)
		gzipWriters.Put(w.gz)
	case !w.decided && w.code != 0:
		w.ResponseWriter.WriteHeader(w.code)
	}
	*w = compressWriter{}
	compressWriters.Put(w)
}
