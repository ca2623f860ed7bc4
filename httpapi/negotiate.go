package httpapi

import (
	"mime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// This file is the one place that decides representation: what a request
// body is (Content-Type) and what a response is (Accept).

const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	// mediaProtobufWatch is the Content-Type of a Protobuf watch stream.
	mediaProtobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	// supportedMediaTypesList is how kube-apiserver lists them in 406/415.
	supportedMediaTypesList = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)

// encoding is a wire format.
type encoding uint8

const (
	encJSON encoding = iota
	encYAML
	encProtobuf
)

// transform is a server-side conversion of the response object.
type transform uint8

const (
	asObject transform = iota
	asTable
	asPartialObjectMetadata
	asPartialObjectMetadataList
)

// representation is the negotiated form of a response.
type representation struct {
	enc encoding
	as  transform
	// metaVersion is the meta.k8s.io version asked for with as= (v1 or
	// v1beta1).
	metaVersion string
}

type acceptClause struct {
	typ, sub string
	params   map[string]string
	q        float64
	order    int
}

// negotiateOutput picks the representation for an Accept header. ok is false
// when nothing acceptable is offered (406).
func negotiateOutput(accept string) (representation, bool) {
	return negotiateOutputFor(accept, false)
}

// negotiateOutputFor is negotiateOutput for a kind; for Unstructured kinds
// (custom resources) a clause asking for the object itself in Protobuf is
// not acceptable, as kube-apiserver's custom resource handler restricts
// it to JSON and YAML (RequestScope.StandardSerializers): the next clause
// is tried.
func negotiateOutputFor(accept string, unstructured bool) (representation, bool) {
	key := negotiatedKey{accept, unstructured}
	if v, ok := negotiated.Load(key); ok {
		n := v.(negotiation)
		return n.rep, n.ok
	}
	rep, ok := negotiateOutputUncached(accept, unstructured)
	if len(accept) <= negotiatedMaxAccept && negotiatedCount.Load() < negotiatedMaxEntries {
		if _, loaded := negotiated.LoadOrStore(key, negotiation{rep, ok}); !loaded {
			negotiatedCount.Add(1)
		}
	}
	return rep, ok
}

// The representations of the Accept headers met so far: a client sends
// the same header on every request, and parsing it (mime.ParseMediaType
// for each clause) cost more than a microsecond of a GET. The answer
// depends on nothing but the header, so entries never go stale; the
// cache stops growing at negotiatedMaxEntries headers of at most
// negotiatedMaxAccept bytes, and other headers are parsed every time.
var (
	negotiated      sync.Map // negotiatedKey -> negotiation
	negotiatedCount atomic.Int64
)

const (
	negotiatedMaxEntries = 256
	negotiatedMaxAccept  = 256
)

type negotiatedKey struct {
	accept       string
	unstructured bool
}

type negotiation struct {
	rep representation
	ok  bool
}

// negotiateOutputUncached is negotiateOutputFor without the cache.
func negotiateOutputUncached(accept string, unstructured bool) (representation, bool) {
	for _, c := range acceptClauses(accept) {
		if r, ok := matchClause(c); ok {
			if unstructured && r.enc == encProtobuf && r.as == asObject {
				continue
			}
			return r, true
		}
	}
	return representation{}, strings.TrimSpace(accept) == ""
}

// negotiateStatus picks the encoding of an error Status for an Accept
// header, as kube-apiserver's ErrorNegotiated does: the first acceptable
// clause that asks for no conversion (as=), and JSON when there is none.
func negotiateStatus(accept string) encoding {
	for _, c := range acceptClauses(accept) {
		if c.params["as"] != "" {
			continue
		}
		if r, ok := matchClause(c); ok {
			return r.enc
		}
	}
	return encJSON
}

// acceptClauses parses an Accept header into its clauses with q > 0, in
// order of preference.
func acceptClauses(accept string) []acceptClause {
	if strings.TrimSpace(accept) == "" {
		return nil
	}
	var clauses []acceptClause
	for i, part := range strings.Split(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		typ, sub, _ := strings.Cut(mt, "/")
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q <= 0 {
			continue
		}
		clauses = append(clauses, acceptClause{typ: typ, sub: sub, params: params, q: q, order: i})
	}
	sort.SliceStable(clauses, func(i, j int) bool { return clauses[i].q > clauses[j].q })
	return clauses
}

func matchClause(c acceptClause) (representation, bool) {
	var r representation
	switch {
	case c.typ == "*" && c.sub == "*", c.typ == "application" && c.sub == "*":
		r.enc = encJSON
	case c.typ == "application" && c.sub == "json":
		r.enc = encJSON
	case c.typ == "application" && c.sub == "yaml":
		r.enc = encYAML
	case c.typ == "application" && c.sub == "vnd.kubernetes.protobuf":
		r.enc = encProtobuf
	default:
		return r, false
	}
	as := c.params["as"]
	if as == "" {
		return r, true
	}
	if c.params["g"] != "meta.k8s.io" {
		return r, false
	}
	v := c.params["v"]
	if v != "v1" && v != "v1beta1" {
		return r, false
	}
	r.metaVersion = v
	switch as {
	case "Table":
		// kube-apiserver converts to Table only in JSON and YAML
		// (RequestScope.AllowsMediaTypeTransform).
		if r.enc == encProtobuf {
			return r, false
		}
		r.as = asTable
	case "PartialObjectMetadata":
		r.as = asPartialObjectMetadata
	case "PartialObjectMetadataList":
		r.as = asPartialObjectMetadataList
	default:
		return r, false
	}
	return r, true
}

// bodyEncoding returns the encoding of a request body by its Content-Type;
// ok is false for an unsupported type (415). An empty Content-Type is JSON.
func bodyEncoding(contentType string) (encoding, bool) {
	if strings.TrimSpace(contentType) == "" {
		return encJSON, true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, false
	}
	switch mt {
	case mediaJSON:
		return encJSON, true
	case mediaYAML:
		return encYAML, true
	case mediaProtobuf:
		return encProtobuf, true
	}
	return 0, false
}
