package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// This file holds what YAML needs beyond the codecs: a bound on request
// bodies' alias expansion, and a conversion of responses that
// sigs.k8s.io/yaml cannot convert.

// jsonToYAML converts a JSON response to the YAML kube-apiserver writes
// (sigs.k8s.io/yaml.JSONToYAML), without reading the JSON as YAML as
// JSONToYAML does. go-yaml's parser built a node for every value: a YAML
// LIST of 8 ConfigMaps of 200,000 finalizers (15 MB of JSON) took the
// daemon from 190 MiB to 1.2 GiB and 2.7 s; and it reads a key longer than
// 1,024 characters as an error, which a stored object can hold (the keys of
// managedFields' fieldsV1 are free-form), so that every YAML read of it
// answered 500. Here encoding/json decodes the JSON, with its numbers as the
// int, uint64 or float64 go-yaml reads them as, and go-yaml writes the
// result as JSONToYAML's does (go-yaml writes long keys as explicit "? "
// keys).
func jsonToYAML(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	return yamlv2.Marshal(yamlNumbers(v))
}

// listToYAML writes a list as jsonToYAML writes its JSON, {top members,
// "items": [item(0), ..., item(n-1)]}, converting one item at a time.
// go-yaml's encoder keeps every event of a document until it ends (some
// 600 bytes a value): a YAML LIST of 8 ConfigMaps of 200,000 finalizers (15
// MB of JSON) took the daemon from 190 MiB to 1.1 GiB. Each item is written
// as the only item of a top-level "items" list, which puts it in the same
// columns as in the whole list (go-yaml folds long strings by column), and
// the top-level members go before and after "items" in go-yaml's sorted
// order of keys. The peak is then that of the largest item.
func listToYAML(top map[string]json.RawMessage, n int, item func(i int) ([]byte, error)) ([]byte, error) {
	var before, after bytes.Buffer
	for _, key := range sortedKeys(top) {
		b, err := jsonToYAML(append(append([]byte(`{`+strconv.Quote(key)+`:`), top[key]...), '}'))
		if err != nil {
			return nil, err
		}
		if key < "items" { // go-yaml orders keys of letters as strings
			before.Write(b)
		} else {
			after.Write(b)
		}
	}
	out := before.Bytes()
	if n == 0 {
		out = append(out, "items: []\n"...)
	} else {
		out = append(out, "items:\n"...)
	}
	for i := 0; i < n; i++ {
		js, err := item(i)
		if err != nil {
			return nil, err
		}
		y, err := jsonToYAML(append(append([]byte(`{"items":[`), js...), ']', '}'))
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.TrimPrefix(y, []byte("items:\n"))...)
	}
	return append(out, after.Bytes()...), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
