package yamlout

import (
	"strconv"
	"time"
	"unsafe"
)

// A string is written plain only when go-yaml would read the plain text
// back as a string: not as a bool, null, int, float or timestamp (go-yaml
// v2's resolve, YAML 1.1 spellings), and not as a YAML 1.1 base-60 float.
// Anything else gets double quotes (go-yaml's stringv).

// special holds the plain scalars go-yaml reads as a bool, null or a
// special float.
var special = map[string]bool{}

func init() {
	for _, s := range []string{
		"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"", "~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
	} {
		special[s] = true
	}
}

// timestampLayouts are the layouts go-yaml tries for a plain scalar that
// starts with four digits and '-'.
var timestampLayouts = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// plainIsString reports whether go-yaml reads s, written plain, as the
// string s. scratch is a buffer it may use; it returns it.
func plainIsString(s []byte, scratch []byte) (bool, []byte) {
	if len(s) == 0 {
		return false, scratch // null
	}
	c := s[0]
	switch {
	case c == '+' || c == '-' || '0' <= c && c <= '9':
	case c == '.':
		if special[string(s)] {
			return false, scratch
		}
		if len(s) >= 2 && '0' <= s[1] && s[1] <= '9' {
			if _, err := strconv.ParseFloat(unsafeString(s), 64); err == nil {
				return false, scratch
			}
		}
		return true, scratch
	case c == 'y' || c == 'Y' || c == 'n' || c == 'N' || c == 't' || c == 'T' ||
		c == 'f' || c == 'F' || c == 'o' || c == 'O' || c == '~':
		return !special[string(s)], scratch
	default:
		return true, scratch
	}
	if special[string(s)] {
		return false, scratch
	}
	if isTimestamp(s) {
		return false, scratch
	}
	plain := s
	for _, b := range s {
		if b == '_' {
			scratch = scratch[:0]
			for _, b := range s {
				if b != '_' {
					scratch = append(scratch, b)
				}
			}
			plain = scratch
			break
		}
	}
	if mayBeInt(plain) {
		if _, err := strconv.ParseInt(unsafeString(plain), 0, 64); err == nil {
			return false, scratch
		}
		if _, err := strconv.ParseUint(unsafeString(plain), 0, 64); err == nil {
			return false, scratch
		}
	}
	if isYAMLFloat(plain) {
		if _, err := strconv.ParseFloat(unsafeString(plain), 64); err == nil {
			return false, scratch
		}
	}
	if len(plain) > 2 && plain[0] == '0' && plain[1] == 'b' {
		// "0b" then a base-2 integer, which may have a sign.
		if isBinary(plain[2:], true) {
			if _, err := strconv.ParseInt(unsafeString(plain[2:]), 2, 64); err == nil {
				return false, scratch
			}
			if _, err := strconv.ParseUint(unsafeString(plain[2:]), 2, 64); err == nil {
				return false, scratch
			}
		}
	} else if len(plain) > 3 && plain[0] == '-' && plain[1] == '0' && plain[2] == 'b' {
		// "-0b" then unsigned base-2 digits, read as a negative int64.
		if isBinary(plain[3:], false) {
			neg := append(append(make([]byte, 0, 80), '-'), plain[3:]...)
			if _, err := strconv.ParseInt(unsafeString(neg), 2, 64); err == nil {
				return false, scratch
			}
		}
	}
	return true, scratch
}

func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// isTimestamp reports whether go-yaml reads s as a timestamp.
func isTimestamp(s []byte) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for _, c := range s[:4] {
		if c < '0' || '9' < c {
			return false
		}
	}
	str := string(s)
	for _, layout := range timestampLayouts {
		if _, err := time.Parse(layout, str); err == nil {
			return true
		}
	}
	return false
}

// mayBeInt reports whether s has the shape strconv.ParseInt or ParseUint
// with base 0 might accept (without underscores): a sign, a base prefix
// and hexadecimal digits. It only spares them inputs they would refuse.
func mayBeInt(s []byte) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X', 'o', 'O', 'b', 'B':
			s = s[2:]
		}
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if !isHex(c) {
			return false
		}
	}
	return true
}

// isBinary reports whether s is base-2 digits, after a sign if signed.
func isBinary(s []byte, signed bool) bool {
	if signed && len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c != '0' && c != '1' {
			return false
		}
	}
	return true
}

// isYAMLFloat reports whether s matches go-yaml's float shape:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func isYAMLFloat(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isBase60Float reports whether s is a YAML 1.1 base-60 float, which
// go-yaml quotes: [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?
func isBase60Float(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i >= len(s) || s[i] < '0' || '9' < s[i] {
		return false
	}
	for i++; i < len(s) && ('0' <= s[i] && s[i] <= '9' || s[i] == '_'); i++ {
	}
	groups := 0
	for i < len(s) && s[i] == ':' {
		i++
		switch {
		case i+1 < len(s) && '0' <= s[i] && s[i] <= '5' && '0' <= s[i+1] && s[i+1] <= '9':
			i += 2
		case i < len(s) && '0' <= s[i] && s[i] <= '9':
			i++
		default:
			return false
		}
		groups++
	}
	if groups == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && ('0' <= s[i] && s[i] <= '9' || s[i] == '_'); i++ {
		}
	}
	return i == len(s)
}
