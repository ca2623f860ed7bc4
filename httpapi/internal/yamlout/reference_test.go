package yamlout

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
)

// reference is the conversion this package replaces (httpapi's
// wholeJSONToYAML before it): encoding/json reads the first value, its
// numbers become what go-yaml reads them as, and go-yaml writes it.
func reference(src []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return yamlv2.Marshal(yamlNumbers(v))
}

// yamlNumbers replaces, in place, each json.Number in v by the value
// go-yaml resolves the same plain scalar to: an int, then a uint64, then
// a float64, and the string when none fits.
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

// yamlLess reports whether go-yaml writes key a before key b, asking
// go-yaml itself: a map of two keys is sorted with one comparison.
func yamlLess(a, b string) bool {
	y, err := yamlv2.Marshal(map[string]int{a: 918273640, b: 918273641})
	if err != nil {
		panic(err)
	}
	// The value written first tells which key came first; values are
	// numbers no key holds.
	i0 := bytes.Index(y, []byte(" 918273640\n"))
	i1 := bytes.Index(y, []byte(" 918273641\n"))
	return i0 < i1
}

// ambiguousOrder reports whether some object in the JSON has keys that
// go-yaml's comparison does not order consistently (a cycle such as
// "a1a" < "a2" < "a19" < "a1a"): go-yaml's output then depends on Go's
// random map iteration order, and no output can match it every time.
func ambiguousOrder(src []byte) bool {
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	var v interface{}
	if d.Decode(&v) != nil {
		return false
	}
	var walk func(v interface{}) bool
	walk = func(v interface{}) bool {
		switch v := v.(type) {
		case map[string]interface{}:
			keys := make([]string, 0, len(v))
			for k, e := range v {
				keys = append(keys, k)
				if walk(e) {
					return true
				}
			}
			// A tournament is transitive when its win counts are
			// 0, 1, ..., n-1.
			wins := make([]int, len(keys))
			for i := range keys {
				for j := i + 1; j < len(keys); j++ {
					if yamlLess(keys[i], keys[j]) {
						wins[i]++
					} else {
						wins[j]++
					}
				}
			}
			slices.Sort(wins)
			for i, w := range wins {
				if w != i {
					return true
				}
			}
		case []interface{}:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
