package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgeapi/edgeapi/registry"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"gzip", true},
		{"gzip, deflate, br", true},
		{"br ,  gzip ", true},
		{"deflate", false},
		{"gzip;q=0.5", false}, // kube-apiserver reads tokens whole
		{"xgzip", false},
		{"", false},
		{",,", false},
	} {
		if got := acceptsGzip(tc.in); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestLocalPeer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"127.0.0.1:4000", true},
		{"127.9.9.9:4000", true},
		{"[::1]:4000", true},
		{"[::ffff:127.0.0.1]:4000", true},
		{"@", true}, // a Unix socket's peer
		{"", true},
		{"192.0.2.7:4000", false},
		{"[2001:db8::1]:4000", false},
		{"[::ffff:192.0.2.7]:4000", false},
	} {
		if got := localPeer(tc.in); got != tc.want {
			t.Errorf("localPeer(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestServer_ResponseCompression: with CompressAll, a LIST over 128 KiB
// (built in memory or streamed, JSON or Protobuf) goes out gzipped, with
// Vary, and decompresses to the bytes sent without compression; a small
// GET, a request that does not ask for gzip in kube-apiserver's terms,
// and a watch are not compressed. With CompressRemote only a peer off
// this machine gets it, and CompressOff never.
func TestServer_ResponseCompression(t *testing.T) {
	db := openTestStore(t)
	serve := func(cfg Config) *Server {
		cfg.Store, cfg.Registry = db, registry.Builtin()
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}
	all := serve(Config{ResponseCompression: CompressAll})
	allStreamed := serve(Config{ResponseCompression: CompressAll, ListBufferBytes: 1})
	remote := serve(Config{})
	off := serve(Config{ResponseCompression: CompressOff})

	// do serves one request on s from peer, asking for encoding.
	do := func(s *Server, peer, method, path, accept, encoding, body string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = peer
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Result()
	}
	const peer = "192.0.2.7:40000"
	if resp := do(all, peer, "POST", "/api/v1/namespaces", "", "", `{"metadata":{"name":"z"}}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create namespace: %d", resp.StatusCode)
	}
	pad := strings.Repeat("0123456789abcdef", 256) // 4 KiB
	for i := range 40 {
		body := fmt.Sprintf(`{"metadata":{"name":"cm%d"},"data":{"pad":%q}}`, i, pad)
		if resp := do(all, peer, "POST", "/api/v1/namespaces/z/configmaps", "", "", body); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", resp.StatusCode)
		}
	}
	const list = "/api/v1/namespaces/z/configmaps"
	const proto = "application/vnd.kubernetes.protobuf"

	for _, tc := range []struct {
		name                   string
		s                      *Server
		peer, path, accept, ae string
		wantGzip               bool
	}{
		{"list JSON", all, peer, list, "", "gzip", true},
		{"list JSON, streamed", allStreamed, peer, list, "", "gzip, deflate", true},
		{"list Protobuf", all, peer, list, proto, "gzip", true},
		{"list Protobuf, streamed", allStreamed, peer, list, proto, "gzip", true},
		{"list on loopback", all, "127.0.0.1:5000", list, "", "gzip", true},
		{"list, gzip with a q-value", all, peer, list, "", "gzip;q=1", false},
		{"list, no Accept-Encoding", all, peer, list, "", "", false},
		{"small get", all, peer, list + "/cm1", "", "gzip", false},
		{"small list", all, peer, list + "?limit=3", "", "gzip", false},
		{"remote: list from afar", remote, peer, list, "", "gzip", true},
		{"remote: list on loopback", remote, "127.0.0.1:5000", list, "", "gzip", false},
		{"remote: list on a Unix socket", remote, "@", list, "", "gzip", false},
		{"off: list from afar", off, peer, list, "", "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(tc.s, tc.peer, "GET", tc.path, tc.accept, tc.ae, "")
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			plain := do(tc.s, tc.peer, "GET", tc.path, tc.accept, "", "")
			want, _ := io.ReadAll(plain.Body)
			if plain.Header.Get("Content-Encoding") != "" {
				t.Fatalf("without Accept-Encoding: Content-Encoding %q", plain.Header.Get("Content-Encoding"))
			}
			gotGzip := resp.Header.Get("Content-Encoding") == "gzip"
			if gotGzip != tc.wantGzip {
				t.Fatalf("Content-Encoding %q (body %d bytes, plain %d), want gzip %v",
					resp.Header.Get("Content-Encoding"), len(got), len(want), tc.wantGzip)
			}
			if gotGzip {
				if v := resp.Header.Get("Vary"); !strings.Contains(v, "Accept-Encoding") {
					t.Errorf("Vary = %q, want Accept-Encoding", v)
				}
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatalf("gunzip: %v", err)
				}
				if len(got) <= gzipThreshold {
					t.Errorf("compressed a body of %d bytes, want only over %d", len(got), gzipThreshold)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("body differs from the uncompressed one (%d against %d bytes)", len(got), len(want))
			}
			if ct, want := resp.Header.Get("Content-Type"), plain.Header.Get("Content-Type"); ct != want {
				t.Errorf("Content-Type %q, want %q", ct, want)
			}
		})
	}

	// A watch is never compressed: its events arrive as they happen.
	t.Run("watch", func(t *testing.T) {
		ts := httptest.NewServer(all.Handler())
		defer ts.Close()
		req, _ := http.NewRequest("GET", ts.URL+list+"?watch=1&resourceVersion=0", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		tr := &http.Transport{DisableCompression: true}
		defer tr.CloseIdleConnections()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("watch Content-Encoding %q, want none", ce)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, `"type":"ADDED"`) {
			t.Errorf("first watch line %q, %v; want an ADDED event in plain JSON", line, err)
		}
	})
}

// TestCompressWriter_FlushFirst: a handler that flushes before writing a
// body gets its own status code out, uncompressed.
func TestCompressWriter_FlushFirst(t *testing.T) {
	rec := httptest.NewRecorder()
	cw := newCompressWriter(rec)
	cw.WriteHeader(http.StatusAccepted)
	cw.Flush()
	_, _ = cw.Write(bytes.Repeat([]byte("x"), gzipThreshold+1))
	cw.finish()
	if got, want := rec.Code, http.StatusAccepted; got != want {
		t.Errorf("status %d, want %d", got, want)
	}
	if ce := rec.Header().Get("Content-Encoding"); ce != "" {
		t.Errorf("Content-Encoding %q after a flush before the body, want none", ce)
	}
	if got := rec.Body.Len(); got != gzipThreshold+1 {
		t.Errorf("body %d bytes, want %d", got, gzipThreshold+1)
	}
}
