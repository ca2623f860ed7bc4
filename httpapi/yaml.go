package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	yamlv2 "go.yaml.in/yaml/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

// This file holds what YAML needs beyond the codecs: a bound on request
// bodies' alias expansion, and a conversion of responses that
// sigs.k8s.io/yaml cannot convert.

// jsonToYAML converts a JSON response to YAML as kube-apiserver does, with
// sigs.k8s.io/yaml.JSONToYAML, and when that fails, from a JSON decoding
// instead. JSONToYAML reads the JSON as YAML, where a key longer than 1,024
// characters is an error; a stored object can hold one (the keys of
// managedFields' fieldsV1 are free-form), and every YAML read of it, or of
// a list holding it, failed with a 500. go-yaml writes such a key as an
// explicit ("? ") key.
func jsonToYAML(b []byte) ([]byte, error) {
	y, err := yaml.JSONToYAML(b)
	if err == nil {
		return y, nil
	}
	var v interface{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil, err
	}
	return yamlv2.Marshal(v)
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
