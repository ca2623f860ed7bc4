package httpapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kjsonstrict "sigs.k8s.io/json"

	"github.com/edgeapi/edgeapi/registry"
)

// codecs holds the serializers for request bodies and non-JSON responses.
// JSON responses of stored objects are spliced from stored bytes instead.
type codecs struct {
	json, yaml, proto runtime.Serializer
	// meta decodes option bodies with only the meta.k8s.io types known,
	// as kube-apiserver decodes a DeleteOptions body.
	meta serializer.CodecFactory
}

func newCodecs() *codecs {
	return &codecs{
		json:  kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, registry.Scheme, registry.Scheme, kjson.SerializerOptions{Strict: true}),
		yaml:  kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, registry.Scheme, registry.Scheme, kjson.SerializerOptions{Yaml: true, Strict: true}),
		proto: protobuf.NewSerializer(registry.Scheme, registry.Scheme),
		meta:  metainternalversionscheme.Codecs,
	}
}

// metaDecoder decodes a body in encoding e into meta.k8s.io/v1 types only.
func (c *codecs) metaDecoder(e encoding) runtime.Decoder {
	media := mediaJSON
	switch e {
	case encYAML:
		media = mediaYAML
	case encProtobuf:
		media = mediaProtobuf
	}
	info, _ := runtime.SerializerInfoForMediaType(c.meta.SupportedMediaTypes(), media)
	return c.meta.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion)
}

func (c *codecs) forEncoding(e encoding) runtime.Serializer {
	switch e {
	case encYAML:
		return c.yaml
	case encProtobuf:
		return c.proto
	}
	return c.json
}

// fieldValidation directives.
const (
	validationIgnore = "Ignore"
	validationWarn   = "Warn"
	validationStrict = "Strict"
)

// decodeBody decodes a request body into a new object of kind k. Unknown and
// duplicate fields are errors under Strict and warnings under Warn (the
// default), as in kube-apiserver.
func (s *Server) decodeBody(k *registry.Kind, body []byte, enc encoding, validation string) (runtime.Object, []string, error) {
	if k.Unstructured {
		return s.decodeUnstructuredBody(k, body, enc, validation)
	}
	if enc == encJSON {
		if obj, ok := decodeCleanJSON(body, k.GVK, k.New); ok {
			obj.GetObjectKind().SetGroupVersionKind(k.GVK)
			normalize(k, obj)
			return obj, nil, nil
		}
	}
	if enc == encYAML {
		if err := checkYAMLExpansion(body, s.cfg.MaxRequestBodyBytes); err != nil {
			return nil, nil, err
		}
	}
	into := k.New()
	def := k.GVK
	obj, gvk, err := s.codecs.forEncoding(enc).Decode(body, &def, into)
	var warnings []string
	if err != nil {
		if strictErr, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			switch validation {
			case validationStrict:
				return nil, nil, decodeError(k, gvk, err, body)
			case validationIgnore:
			default:
				for _, e := range strictErr.Errors() {
					warnings = append(warnings, e.Error())
				}
			}
		} else {
			return nil, nil, decodeError(k, gvk, err, body)
		}
	}
	if gvk != nil && (gvk.Kind != k.GVK.Kind || gvk.GroupVersion() != k.GVK.GroupVersion()) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: converting (%s.%s) to (%s.%s): unknown conversion",
			gvk.Kind, gvk.Version, k.GVK.Kind, gvk.Version, gvk.Kind, k.InternalPackage, k.GVK.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	normalize(k, obj)
	return obj, warnings, nil
}

// decodeCleanJSON decodes a JSON body in one pass when it is clean: it
// parses, has no unknown or duplicate field, and its apiVersion and kind
// are gvk's or absent. Then the result is what the strict serializer
// gives, which reads the body twice (once for apiVersion and kind, once for
// the object). For anything else it reports false, and the caller decodes
// through the serializer, which words the errors and warnings.
func decodeCleanJSON(body []byte, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, bool) {
	obj := newObj()
	strictErrs, err := kjsonstrict.UnmarshalStrict(body, obj)
	if err != nil || len(strictErrs) > 0 {
		return nil, false
	}
	got := obj.GetObjectKind().GroupVersionKind()
	if (got.Kind != "" && got.Kind != gvk.Kind) || (got.Version != "" || got.Group != "") && got.GroupVersion() != gvk.GroupVersion() {
		return nil, false
	}
	return obj, true
}

// decodeError words a body decoding failure as kube-apiserver's
// transformDecodeError does.
func decodeError(k *registry.Kind, gvk *schema.GroupVersionKind, err error, body []byte) error {
	if gvk != nil && gvk.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, k.GVK.Kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", k.GVK.Kind, err, summarizeData(body, 30)))
}

func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// objectJSON returns the JSON of a stored object as served: stored bytes
// with kind and apiVersion spliced in front, or a conversion for kinds
// stored in another version.
func objectJSON(k *registry.Kind, value []byte) ([]byte, error) {
	if k.FromStorage != nil && k.Unstructured {
		if k.AppendServedJSON != nil {
			if b, ok := k.AppendServedJSON(nil, value); ok {
				return b, nil
			}
		}
		// See servedCache. The result is shared and read-only.
		key := servedKeyOf(k, value)
		if b := served.get(key); b != nil {
			return b, nil
		}
		b, err := decodedJSON(k, value)
		if err == nil {
			served.put(key, b)
		}
		return b, err
	}
	if k.FromStorage != nil {
		return decodedJSON(k, value)
	}
	return spliceTypeMeta(nil, k.GVK, value), nil
}

// decodedJSON is the JSON of a stored object decoded and converted.
func decodedJSON(k *registry.Kind, value []byte) ([]byte, error) {
	obj, err := k.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// spliceTypeMeta appends value to dst with kind and apiVersion inserted as
// its first members.
func spliceTypeMeta(dst []byte, gvk schema.GroupVersionKind, value []byte) []byte {
	dst = append(dst, `{"kind":`...)
	dst = strconv.AppendQuote(dst, gvk.Kind)
	dst = append(dst, `,"apiVersion":`...)
	dst = strconv.AppendQuote(dst, gvk.GroupVersion().String())
	rest := bytes.TrimLeft(value, " \t\r\n")
	if len(rest) > 1 && rest[0] == '{' {
		rest = rest[1:]
		if r := bytes.TrimLeft(rest, " \t\r\n"); len(r) > 0 && r[0] != '}' {
			dst = append(dst, ',')
		}
		return append(dst, rest...)
	}
	return append(dst, '}')
}

// appendItemJSON appends itemJSON(k, value) to dst; a custom resource
// that AppendServedJSON serves is written straight into dst.
func appendItemJSON(dst []byte, k *registry.Kind, value []byte) ([]byte, error) {
	if k.AppendServedJSON != nil {
		if out, ok := k.AppendServedJSON(dst, value); ok {
			return out, nil
		}
	}
	item, err := itemJSON(k, value)
	if err != nil {
		return dst, err
	}
	return append(dst, item...), nil
}

// itemJSON returns the JSON of a stored object as a list item (no kind or
// apiVersion).
func itemJSON(k *registry.Kind, value []byte) ([]byte, error) {
	if k.Unstructured {
		// Custom resource list items keep kind and apiVersion, as
		// kube-apiserver's UnstructuredList encodes them.
		return objectJSON(k, value)
	}
	if k.FromStorage == nil {
		return value, nil
	}
	obj, err := k.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return json.Marshal(obj)
}

// normalize does what kube-apiserver's decoding does beyond JSON: defaulting
// and the conversion-time normalization of some kinds (Secret stringData).
// It runs before field management, so managedFields see its result.
func normalize(k *registry.Kind, obj runtime.Object) {
	registry.Scheme.Default(obj)
	if k.NormalizeOnDecode != nil {
		k.NormalizeOnDecode(obj)
	}
}
