package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// This file holds what YAML needs beyond the codecs: a bound on request
// bodies' alias expansion, and a conversion of responses that
// sigs.k8s.io/yaml cannot convert.

// jsonToYAML converts a JSON response to the YAML kube-apiserver writes
// (sigs.k8s.io/yaml.JSONToYAML, which reads the JSON as YAML and writes it
// with go-yaml), with two differences in cost, not in bytes:
//   - encoding/json reads the JSON (numbers become the int, uint64 or
//     float64 go-yaml reads them as). go-yaml's parser keeps a node for
//     every value, and reads a key longer than 1,024 characters as an
//     error: a stored object can hold one (managedFields' fieldsV1 keys are
//     free-form), and every YAML read of it answered 500.
//   - an object's top-level arrays (a list's items, a Table's rows) are
//     written one element at a time (see yamlElements). go-yaml's encoder
//     keeps every event of a document until it ends, over 600 bytes a
//     value: a YAML LIST of 8 ConfigMaps of 200,000 finalizers (15 MB of
//     JSON) took the daemon from 190 MiB to 1.1 GiB.
func jsonToYAML(b []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(b, &top) != nil || !letterKeys(top) {
		return wholeJSONToYAML(b)
	}
	var out []byte
	for _, key := range slices.Sorted(maps.Keys(top)) { // go-yaml's order, for keys of letters
		v := top[key]
		var elems []json.RawMessage
		if t := bytes.TrimLeft(v, " \t\r\n"); len(t) > 0 && t[0] == '[' && json.Unmarshal(v, &elems) == nil && len(elems) > 0 {
			y, err := yamlElements(key, elems)
			if err != nil {
				return nil, err
			}
			out = append(out, y...)
			continue
		}
		y, err := wholeJSONToYAML(append(append([]byte(`{`+strconv.Quote(key)+`:`), v...), '}'))
		if err != nil {
			return nil, err
		}
		out = append(out, y...)
	}
	return out, nil
}

// yamlElements writes the top-level member key: [elems...] one element at
// a time (see yamlElement).
func yamlElements(key string, elems []json.RawMessage) ([]byte, error) {
	var out []byte
	for i, e := range elems {
		y, err := yamlElement(key, e, i == 0)
		if err != nil {
			return nil, err
		}
		out = append(out, y...)
	}
	return out, nil
}

// yamlElement writes one element of the top-level array member key. It is
// written as the only element of key's array, which puts it in the columns
// it has in the whole document (go-yaml folds long strings by column); the
// "key:" line comes with the first element only.
func yamlElement(key string, elem []byte, first bool) ([]byte, error) {
	y, err := wholeJSONToYAML(append(append([]byte(`{`+strconv.Quote(key)+`:[`), elem...), ']', '}'))
	if err != nil {
		return nil, err
	}
	if !first {
		y = y[bytes.IndexByte(y, '\n')+1:] // the "key:" line
	}
	return y, nil
}

// largeYAML lets one conversion of a large document (over largeYAMLBytes of
// JSON) run at a time, daemon-wide: go-yaml holds over 600 bytes a value
// until the document ends, so each costs tens of times its size. Four
// concurrent YAML lists of 16 ConfigMaps of 50,000 finalizers took the
// daemon past 300 MiB. A conversion is CPU work on a bounded input (a
// stored object is under the 3 MiB request limit), so waiting is short.
var largeYAML = make(chan struct{}, 1)

const largeYAMLBytes = 256 << 10

// wholeJSONToYAML converts a JSON document to YAML in one go.
func wholeJSONToYAML(b []byte) ([]byte, error) {
	if len(b) > largeYAMLBytes {
		largeYAML <- struct{}{}
		defer func() { <-largeYAML }()
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	return yamlv2.Marshal(yamlNumbers(v))
}

// letterKeys reports whether every key of m is ASCII letters, which go-yaml
// orders as strings and writes as a plain key on one line (up to 128).
func letterKeys[V any](m map[string]V) bool {
	for k := range m {
		if k == "" || len(k) > 128 {
			return false
		}
		for i := 0; i < len(k); i++ {
			if c := k[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// yamlNumbers replaces, in place, each json.Number in v by the value
// go-yaml resolves the same plain scalar to: an int, then a uint64, then a
// float64, and the string when none fits.
func yamlNumbers(v interface{}) interface{} {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			if i == int64(int(i)) {
				return int(i)
			}
			return i
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
		return string(v)
	case map[string]interface{}:
		for k, e := range v {
			v[k] = yamlNumbers(e)
		}
	case []interface{}:
		for i, e := range v {
			v[i] = yamlNumbers(e)
		}
	}
	return v
}

// checkYAMLExpansion refuses, with a 413, a YAML body whose aliases expand
// to more than limit bytes of JSON. sigs.k8s.io/yaml, which every YAML
// body goes through, decodes YAML with go-yaml and then marshals the result
// as JSON, writing each alias out in full. go-yaml bounds aliases by the
// nodes they expand to, not the bytes: 2,048 aliases of one 1 MiB string
// are a 1.1 MB body that became 2 GiB of JSON: the daemon's peak RSS went
// from 25 MiB to 8 GiB, and it answered after 50 s. Here the body is decoded with the same go-yaml, where an
// alias of a string shares it, and the JSON size is added up until it
// passes limit. A body without '*' has no alias and costs nothing more; one
// go-yaml cannot decode is left to the decoder proper, which words the
// error.
func checkYAMLExpansion(body []byte, limit int64) error {
	if bytes.IndexByte(body, '*') < 0 {
		return nil
	}
	var v interface{}
	if yamlv2.Unmarshal(body, &v) != nil {
		return nil
	}
	if n := yamlJSONSize(v, limit); n > limit {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d: the YAML body expands to more than that through its aliases", limit))
	}
	return nil
}

// yamlJSONSize returns about the size of v's JSON (at least its strings
// and keys), stopping once it passes limit.
func yamlJSONSize(v interface{}, limit int64) int64 {
	var n int64
	var walk func(v interface{}) bool
	walk = func(v interface{}) bool {
		switch v := v.(type) {
		case string:
			n += int64(len(v)) + 2
		case []byte:
			n += int64(len(v)) + 2
		case map[interface{}]interface{}:
			n += 2
			for k, e := range v {
				if s, ok := k.(string); ok {
					n += int64(len(s)) + 4
				} else {
					n += 8
				}
				if n > limit || !walk(e) {
					return false
				}
			}
		case []interface{}:
			n += 2
			for _, e := range v {
				n++
				if n > limit || !walk(e) {
					return false
				}
			}
		default:
			n += 4
		}
		return n <= limit
	}
	walk(v)
	return n
}
