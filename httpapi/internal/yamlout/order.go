package yamlout

import (
	"unicode"
	"unicode/utf8"
)

// go-yaml v2 writes a map's keys in a "natural" order of its own (its
// keyList.Less), which kube-apiserver's YAML therefore has. For two
// strings it looks at the first rune where they differ:
//   - two letters (unicode.IsLetter) compare as runes;
//   - a letter comes after anything that is not a letter;
//   - otherwise the runs of digits (unicode.IsDigit) that start there are
//     read as numbers (digit value = rune - '0', in wrapping int64) and the
//     smaller number comes first; then the shorter run; then the smaller
//     rune. When either rune is '0' and a digit other than '0' comes
//     earlier in the run the two strings share, both numbers are read
//     with a leading 1, so that "a10" and "a1x" still differ by number.
//
// When one string is a prefix of the other, the shorter comes first.
//
// This is not a strict weak order: "a1a" < "a2" < "a19" < "a1a". Such a
// key set has no single sorted order, and go-yaml's output then depends on
// the order Go's map iteration hands it the keys. See riskyKey.

// compareKeys returns -1 when go-yaml writes key a before b, 1 when after,
// and 0 when they are equal.
func compareKeys(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if ca == cb && ca < utf8.RuneSelf {
			i++
			j++
			continue
		}
		ra, wa := rune(ca), 1
		if ca >= utf8.RuneSelf {
			ra, wa = utf8.DecodeRune(a[i:])
		}
		rb, wb := rune(cb), 1
		if cb >= utf8.RuneSelf {
			rb, wb = utf8.DecodeRune(b[j:])
		}
		if ra == rb {
			i += wa
			j += wb
			continue
		}
		return compareAt(a, b, i, j, ra, rb)
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

// compareAt decides between a and b, which share everything before their
// first differing runes ra (at a[i:]) and rb (at b[j:]).
func compareAt(a, b []byte, i, j int, ra, rb rune) int {
	la, lb := isLetter(ra), isLetter(rb)
	switch {
	case la && lb:
		return sign(ra < rb)
	case la:
		return 1
	case lb:
		return -1
	}
	var na, nb int64
	if ra == '0' || rb == '0' {
		// Is there a digit other than '0' in the digits just before?
		for k := i; k > 0; {
			r, w := rune(a[k-1]), 1
			if r >= utf8.RuneSelf {
				r, w = utf8.DecodeLastRune(a[:k])
			}
			if !isDigit(r) {
				break
			}
			if r != '0' {
				na, nb = 1, 1
				break
			}
			k -= w
		}
	}
	na, runA := digitRun(a[i:], na)
	nb, runB := digitRun(b[j:], nb)
	switch {
	case na != nb:
		return sign(na < nb)
	case runA != runB:
		return sign(runA < runB)
	}
	return sign(ra < rb)
}

// digitRun reads the digits at the start of s onto n and returns it and
// how many runes they are.
func digitRun(s []byte, n int64) (int64, int) {
	runes := 0
	for len(s) > 0 {
		r, w := rune(s[0]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(s)
			if !unicode.IsDigit(r) {
				break
			}
		} else if r < '0' || '9' < r {
			break
		}
		n = n*10 + int64(r-'0')
		runes++
		s = s[w:]
	}
	return n, runes
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r)
}

func sign(less bool) int {
	if less {
		return -1
	}
	return 1
}

// riskyKey reports whether key may make compareKeys inconsistent within
// a key set: it holds a digit followed by a letter, a digit outside ASCII
// or a run of 19 or more digits (which can overflow). Without such keys
// compareKeys orders strings as sequences of runes and digit runs (a run
// by value, then length), which is a total order, so sorting puts equal
// keys side by side.
func riskyKey(key []byte) bool {
	run := 0
	for i := 0; i < len(key); {
		r, w := rune(key[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(key[i:])
		}
		switch {
		case '0' <= r && r <= '9':
			run++
			if run >= 19 {
				return true
			}
		case isDigit(r):
			return true
		case run > 0 && isLetter(r):
			return true
		default:
			run = 0
		}
		i += w
	}
	return false
}
