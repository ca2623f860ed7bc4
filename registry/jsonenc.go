package registry

import (
	"math"
	"slices"
	"strconv"

	"github.com/edgeapi/edgeapi/internal/jsonstr"
)

// appendJSON appends the JSON encoding of v, a tree of the values JSON
// decoding gives (map[string]interface{}, []interface{}, string, int64,
// float64, bool, nil), byte for byte as encoding/json.Marshal writes it:
// map keys sorted, strings HTML-escaped, floats in ES6 form. It walks the
// tree without reflection, where encoding/json allocates for every map
// key and value (a third of a custom resource create's allocations). It
// reports false, having appended part of v, for any other type or a
// non-finite float; the caller then uses encoding/json.
func appendJSON(dst []byte, v interface{}) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return jsonstr.Append(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case float64:
		return appendJSONFloat(dst, v)
	case map[string]interface{}:
		return appendJSONObject(dst, v, "")
	case []interface{}:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendJSON(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendJSONObject appends m without its member skip (none when "").
func appendJSONObject(dst []byte, m map[string]interface{}, skip string) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	var buf [32]string
	keys := buf[:0]
	for k := range m {
		if k != skip || skip == "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendJSON(dst, m[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendJSONFloat is encoding/json's float64 form.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}
