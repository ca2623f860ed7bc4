package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Handlers return objects or JSON bytes; these functions are the only ones
// that write response bodies.

// ctxStatusNoProtobuf, set in the echo context, makes writeError answer
// JSON where the client asked for a Protobuf Status.
const ctxStatusNoProtobuf = "edgeapi.statusNoProtobuf"

// writeError writes err as a metav1.Status with its code, in JSON, YAML or
// Protobuf as the Accept header asks.
func (s *Server) writeError(c echo.Context, err error) error {
	st := statusOf(err)
	st.Kind, st.APIVersion = "Status", "v1"
	audit.SetResponseStatus(c.Request().Context(), st)
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if code >= 500 {
		s.log.Sugar().Errorw("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "code", code, "error", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		c.Response().Header().Set("Retry-After", itoa(int64(st.Details.RetryAfterSeconds)))
	}
	// In the encoding the client asked for, JSON when it asked for none
	// that can carry a Status (kube-apiserver's ErrorNegotiated).
	enc := negotiateStatus(c.Request().Header.Get("Accept"))
	if enc == encProtobuf && c.Get(ctxStatusNoProtobuf) != nil {
		enc = encJSON
	}
	switch enc {
	case encYAML, encProtobuf:
		var buf bytes.Buffer
		if err := s.codecs.forEncoding(enc).Encode(st, &buf); err == nil {
			media := mediaYAML
			if enc == encProtobuf {
				media = mediaProtobuf
			}
			return c.Blob(code, media, buf.Bytes())
		}
	}
	b, jerr := json.Marshal(st)
	if jerr != nil {
		return c.String(http.StatusInternalServerError, jerr.Error())
	}
	return c.Blob(code, mediaJSON, b)
}

// writeStatusSuccess writes a Success Status (no code), as DELETE returns
// for an object deleted at once.
func (s *Server) writeStatusSuccess(c echo.Context, rep representation, details *metav1.StatusDetails) error {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Details: details}
	audit.SetResponseStatus(c.Request().Context(), st)
	return s.writeTyped(c, http.StatusOK, rep, st)
}

// writeTyped writes a typed object (Status, Table, discovery documents) in
// the negotiated encoding.
func (s *Server) writeTyped(c echo.Context, code int, rep representation, obj runtime.Object) error {
	if rep.enc == encProtobuf {
		var buf bytes.Buffer
		if err := s.codecs.proto.Encode(obj, &buf); err == nil {
			return c.Blob(code, mediaProtobuf, buf.Bytes())
		}
		// Types without protobuf support fall back to JSON.
		rep.enc = encJSON
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return s.writeError(c, err)
	}
	return s.writeJSONBytes(c, code, rep, b)
}

// writeJSONBytes writes a JSON document in the negotiated encoding.
func (s *Server) writeJSONBytes(c echo.Context, code int, rep representation, b []byte) error {
	if rep.enc == encYAML {
		y, err := jsonToYAML(b)
		if err != nil {
			return s.writeError(c, err)
		}
		return c.Blob(code, mediaYAML, y)
	}
	return c.Blob(code, mediaJSON, b)
}

// writeStored writes one stored object of kind k.
func (s *Server) writeStored(c echo.Context, code int, rep representation, k *registry.Kind, value []byte) error {
	switch rep.as {
	case asTable:
		t, err := s.tableFor(k, rep, [][]byte{value}, nil, c.QueryParam("includeObject"))
		if err != nil {
			return s.writeError(c, err)
		}
		return s.writeTyped(c, code, rep, t)
	case asPartialObjectMetadata:
		pom, err := partialMetadata(k, value, rep.metaVersion)
		if err != nil {
			return s.writeError(c, err)
		}
		return s.writeTyped(c, code, rep, pom)
	case asPartialObjectMetadataList:
		return s.writeError(c, errNotAcceptableTransform(
			"you requested PartialObjectMetadataList, but the requested object is not a list ("+k.InternalTypeName(false)+")"))
	}
	if rep.enc == encProtobuf {
		if b, ok := appendProtoObject(nil, k, value); ok {
			return c.Blob(code, mediaProtobuf, b)
		}
		obj, err := k.DecodeStored(value)
		if err != nil {
			return s.writeError(c, err)
		}
		return s.writeTyped(c, code, rep, obj)
	}
	b, err := objectJSON(k, value)
	if err != nil {
		return s.writeError(c, err)
	}
	return s.writeJSONBytes(c, code, rep, b)
}

// writeNew writes an object that is not (or not yet) stored: a dry-run
// result.
func (s *Server) writeNew(c echo.Context, code int, rep representation, k *registry.Kind, obj runtime.Object) error {
	value, err := k.EncodeStorage(obj)
	if err != nil {
		return s.writeError(c, err)
	}
	if rv := registry.Accessor(obj).GetResourceVersion(); rv != "" {
		// A dry-run update answers with the stored resourceVersion.
		if n, perr := strconv.ParseInt(rv, 10, 64); perr == nil {
			if value, err = store.StampRevision(value, n); err != nil {
				return s.writeError(c, err)
			}
		}
	}
	return s.writeStored(c, code, rep, k, value)
}

// partialMetadata returns the PartialObjectMetadata of a stored object.
func partialMetadata(k *registry.Kind, value []byte, metaVersion string) (*metav1.PartialObjectMetadata, error) {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, err
	}
	if metaVersion == "" {
		metaVersion = "v1"
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + metaVersion},
		ObjectMeta: m.Metadata,
	}, nil
}
