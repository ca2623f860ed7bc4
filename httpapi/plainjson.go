package httpapi

import (
	"strconv"
)

// decodePlainJSONObject decodes body, a JSON object that plainJSON
// accepted (no backslash, so no escapes, and valid UTF-8), as
// encoding/json.Unmarshal into a map[string]interface{} does: numbers as
// float64, the last of duplicate keys winning, empty arrays non-nil. It
// reads the body once, where encoding/json scans it twice with its state
// machine (about 15 µs for a 1 KiB ConfigMap). It reports false for
// anything it does not take (invalid JSON, a number float64 cannot hold,
// a control character in a string); the caller then decodes with
// encoding/json, which decides.
func decodePlainJSONObject(body []byte) (map[string]interface{}, bool) {
	d := plainDecoder{b: body}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	if d.i != len(d.b) {
		return nil, false
	}
	m, ok := v.(map[string]interface{})
	return m, ok
}

// maxPlainDepth bounds the nesting decodePlainJSONObject takes; deeper
// bodies go to encoding/json (which refuses more than 10,000 levels).
const maxPlainDepth = 1000

type plainDecoder struct {
	b []byte
	i int
}

func (d *plainDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *plainDecoder) value(depth int) (interface{}, bool) {
	if depth >= maxPlainDepth {
		return nil, false
	}
	d.space()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		m := map[string]interface{}{}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return m, true
		}
		for {
			d.space()
			k, ok := d.str()
			if !ok {
				return nil, false
			}
			d.space()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return nil, false
			}
			d.i++
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			d.space()
			if d.i >= len(d.b) {
				return nil, false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case '}':
				d.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		d.i++
		a := []interface{}{}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return a, true
		}
		for {
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			d.space()
			if d.i >= len(d.b) {
				return nil, false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

// str reads a string without escapes (plainJSON has none).
func (d *plainDecoder) str() (string, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return string(d.b[start:j]), true
		case c < 0x20 || c == '\\':
			return "", false
		}
	}
	return "", false
}

func (d *plainDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// number reads a number of JSON's grammar as a float64.
func (d *plainDecoder) number() (interface{}, bool) {
	start := d.i
	j := d.i
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	switch {
	case j < len(d.b) && d.b[j] == '0':
		j++
	case j < len(d.b) && d.b[j] >= '1' && d.b[j] <= '9':
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		if j >= len(d.b) || d.b[j] < '0' || d.b[j] > '9' {
			return nil, false
		}
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if j >= len(d.b) || d.b[j] < '0' || d.b[j] > '9' {
			return nil, false
		}
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
	}
	f, err := strconv.ParseFloat(string(d.b[start:j]), 64)
	if err != nil {
		return nil, false
	}
	d.i = j
	return f, true
}
