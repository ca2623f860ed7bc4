package httpapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/munnerz/goautoneg"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec"
	"github.com/edgeapi/edgeapi/registry"
)

// edgeapi serves kube-apiserver's OpenAPI documents: /openapi/v2 and
// /openapi/v3, the index of group-versions with a hash per document and one
// document per group-version, with kube-apiserver's schemas for the
// built-in kinds and each kind's own schema otherwise (see package
// openapispec). kubectl reads them for explain, for client-side apply's
// strategic merge patches and to learn that the server validates fields
// itself.
//
// The documents follow the registry: they are built from a snapshot on
// first request and kept for its generation (a group-version's document
// for as long as its kinds stay the same), so serving one is a map lookup.
//
// The documents are served in JSON only: a client that accepts nothing but
// the protobuf forms gets 406, as kube-apiserver answers a form it does not
// have. kubectl 1.36 reads the v3 documents in JSON (explain, apply's
// strategic merge patches) and asks for the v2 protobuf document only when
// v3 fails, falling back to its compiled-in types on 406; gnostic's
// converters would add about 1 MiB to the binary for older clients.

// openAPIDoc is one built document.
type openAPIDoc struct {
	json  []byte
	etag  string // the hash: sha512 of json, upper-case hex, as kube-openapi's
	built time.Time
}

func newOpenAPIDoc(b []byte) *openAPIDoc {
	return &openAPIDoc{json: b, etag: fmt.Sprintf("%X", sha512.Sum512(b)), built: time.Now()}
}

// openAPICache holds the documents of the latest registry snapshot
// generation. A group-version's document is kept across generations while
// the same Kind values are served there, so a registry change rebuilds only
// the documents it changed (and the index and v2 document, which list
// everything, from the kept parts).
type openAPICache struct {
	mu      sync.Mutex
	gen     uint64
	kinds   []*registry.Kind
	byGV    map[string][]*registry.Kind
	v3      map[string]*v3Entry // by group-version path
	index   *openAPIDoc
	v2      *openAPIDoc
	builder openapispec.Builder
}

// v3Entry is a group-version's document and the kinds it was built from.
type v3Entry struct {
	kinds []*registry.Kind
	doc   *openAPIDoc // nil: no kind served there
}

// openAPICaches maps a *Server to its *openAPICache (kept here rather than
// in Server; an entry lives as long as the process, which runs one Server
// outside tests).
var openAPICaches sync.Map

// openAPI returns the server's document cache, moved to the current
// registry snapshot when the registry changed since it was filled.
func (s *Server) openAPI() *openAPICache {
	v, ok := openAPICaches.Load(s)
	if !ok {
		v, _ = openAPICaches.LoadOrStore(s, &openAPICache{v3: map[string]*v3Entry{}})
	}
	c := v.(*openAPICache)
	snap := s.cfg.Registry.Snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil || snap.Generation() > c.gen {
		c.gen, c.kinds = snap.Generation(), snap.Kinds()
		c.byGV = map[string][]*registry.Kind{}
		for _, k := range c.kinds {
			p := openapispec.GroupVersionPath(k)
			c.byGV[p] = append(c.byGV[p], k)
		}
		for p, e := range c.v3 {
			if !sameKinds(e.kinds, c.byGV[p]) {
				delete(c.v3, p)
			}
		}
		c.v2, c.index = nil, nil
		c.builder.Forget(c.kinds)
	}
	return c
}

func sameKinds(a, b []*registry.Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// v3DocLocked returns the document of a group-version path, or nil when no
// kind is served there. c.mu must be held.
func (c *openAPICache) v3DocLocked(gvPath string) (*openAPIDoc, error) {
	if e, ok := c.v3[gvPath]; ok {
		return e.doc, nil
	}
	kinds := c.byGV[gvPath]
	var d *openAPIDoc
	if len(kinds) > 0 {
		b, err := c.builder.V3(kinds, gvPath, Version.GitVersion)
		if err != nil {
			return nil, err
		}
		if b != nil {
			d = newOpenAPIDoc(b)
		}
	}
	c.v3[gvPath] = &v3Entry{kinds: kinds, doc: d}
	return d, nil
}

func (c *openAPICache) v3Doc(gvPath string) (*openAPIDoc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v3DocLocked(gvPath)
}

// v3Index returns the /openapi/v3 index: each group-version's document URL
// with its hash, so that the hash changes whenever the document does.
func (c *openAPICache) v3Index() (*openAPIDoc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index != nil {
		return c.index, nil
	}
	type entry struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	}
	index := struct {
		Paths map[string]entry `json:"paths"`
	}{Paths: make(map[string]entry, len(c.byGV))}
	for p := range c.byGV {
		d, err := c.v3DocLocked(p)
		if err != nil {
			return nil, err
		}
		if d != nil {
			index.Paths[p] = entry{ServerRelativeURL: v3URL(p, d.etag)}
		}
	}
	b, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("marshal openapi index: %w", err)
	}
	c.index = newOpenAPIDoc(b)
	return c.index, nil
}

func (c *openAPICache) v2Doc() (*openAPIDoc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v2 != nil {
		return c.v2, nil
	}
	b, err := c.builder.V2(c.kinds, Version.GitVersion)
	if err != nil {
		return nil, err
	}
	c.v2 = newOpenAPIDoc(b)
	return c.v2, nil
}

func v3URL(gvPath, hash string) string {
	return (&url.URL{Path: "/openapi/v3/" + gvPath, RawQuery: url.Values{"hash": {hash}}.Encode()}).String()
}

func (s *Server) serveOpenAPIV3(c echo.Context) error {
	sub := strings.Trim(strings.TrimPrefix(c.Request().URL.Path, "/openapi/v3"), "/")
	cache := s.openAPI()
	if sub == "" {
		d, err := cache.v3Index()
		if err != nil {
			return s.writeError(c, err)
		}
		// kube-apiserver 1.36 answers the index as text/plain (s33
		// openapi-v3-index), with an ETag and conditional requests.
		h := c.Response().Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Etag", strconv.Quote(d.etag))
		http.ServeContent(c.Response(), c.Request(), "", d.built, bytes.NewReader(d.json))
		return nil
	}
	d, err := cache.v3Doc(sub)
	if err != nil {
		return s.writeError(c, err)
	}
	if d == nil {
		return s.notFound(c)
	}
	return s.serveOpenAPIDoc(c, d, sub)
}

// serveOpenAPIV2 serves the OpenAPI v2 document.
func (s *Server) serveOpenAPIV2(c echo.Context) error {
	d, err := s.openAPI().v2Doc()
	if err != nil {
		return s.writeError(c, err)
	}
	return s.serveOpenAPIDoc(c, d, "")
}

// serveOpenAPIDoc answers with d when the Accept header allows JSON, with
// kube-openapi's headers: an ETag (its hash), Vary: Accept, and
// conditional requests. A v3 document (gvPath not empty) asked for with a
// hash that is not its own redirects (301) to its current URL; with its own
// hash it may be cached for a year. Otherwise the answer is 406 with an
// empty body.
func (s *Server) serveOpenAPIDoc(c echo.Context, d *openAPIDoc, gvPath string) error {
	req, h := c.Request(), c.Response().Header()
	accept := req.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	h.Add("Vary", "Accept")
	for _, clause := range goautoneg.ParseAccept(accept) {
		if (clause.Type != "application" && clause.Type != "*") || (clause.SubType != "json" && clause.SubType != "*") {
			continue
		}
		h.Set("Content-Type", mediaJSON)
		h.Set("Etag", strconv.Quote(d.etag))
		if hash := req.URL.Query().Get("hash"); hash != "" && gvPath != "" {
			if hash != d.etag {
				return c.Redirect(http.StatusMovedPermanently, v3URL(gvPath, d.etag))
			}
			h.Set("Cache-Control", "public, immutable")
			h.Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		}
		http.ServeContent(c.Response(), req, "", d.built, bytes.NewReader(d.json))
		return nil
	}
	c.Response().WriteHeader(http.StatusNotAcceptable)
	return nil
}
