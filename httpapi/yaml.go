package httpapi

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/edgeapi/edgeapi/httpapi/internal/yamlout"
	yamlv2 "go.yaml.in/yaml/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// This file holds what YAML needs beyond the codecs: a bound on request
// bodies' alias expansion, and the conversion of JSON responses.

// jsonToYAML converts a JSON response to the YAML kube-apiserver writes:
// the bytes of sigs.k8s.io/yaml.JSONToYAML, written by yamlout as it
// reads the JSON. go-yaml's encoder keeps every event of a document until
// it ends, hundreds of bytes a value: a 3 MB object of 250,000 values
// took 200-330 MB, and a YAML LIST of 8 ConfigMaps of 200,000 finalizers
// (15 MB of JSON) took the daemon from 190 MiB to 1.1 GiB. yamlout
// allocates about twice the JSON's size. Keys longer than 1,024
// characters, which go-yaml's parser (and so JSONToYAML) refuses, are
// written like any other: a stored object can hold one (managedFields'
// fieldsV1 keys are free-form).
func jsonToYAML(b []byte) ([]byte, error) {
	return yamlout.Append(nil, b)
}

// yamlElement writes one element of the top-level array member key. It is
// written as the only element of key's array, which puts it in the columns
// it has in the whole document (go-yaml folds long strings by column); the
// "key:" line comes with the first element only.
func yamlElement(key string, elem []byte, first bool) ([]byte, error) {
	y, err := jsonToYAML(append(append([]byte(`{`+strconv.Quote(key)+`:[`), elem...), ']', '}'))
	if err != nil {
		return nil, err
	}
	if !first {
		y = y[bytes.IndexByte(y, '\n')+1:] // the "key:" line
	}
	return y, nil
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
