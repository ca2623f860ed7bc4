package store

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// This file writes revisions into stored JSON. An object's
// metadata.resourceVersion is the decimal string of its ModRev; the writer
// stamps it on every write so that bytes read from the store are sent to
// clients as they are.

// rvLocation is where the resourceVersion goes in one JSON value: either
// the span [start, end) of an existing "resourceVersion" member's value, to
// be replaced, or (insert) the offset just after the metadata object's '{',
// where a new first member goes.
type rvLocation struct {
	start, end int
	insert     bool
	// nonEmpty: when inserting, the metadata object already has members, so
	// the new member needs a trailing comma.
	nonEmpty bool
}

// StampRevision returns a copy of value, a JSON object, whose top-level
// metadata.resourceVersion is the decimal string of rev. An existing
// resourceVersion member is replaced in place; otherwise one is inserted as
// the metadata object's first member. Nothing else in value changes.
//
// It makes one pass over value up to the end of the metadata object and one
// allocation. It returns ErrInvalidObject when value is not a JSON object
// with a top-level "metadata" object.
func StampRevision(value []byte, rev int64) ([]byte, error) {
	loc, err := locateRevision(value)
	if err != nil {
		return nil, err
	}
	return stampAt(value, loc, rev), nil
}

// stampAt splices rev into value at loc, into one new slice.
func stampAt(value []byte, loc rvLocation, rev int64) []byte {
	const member = `"resourceVersion":""`
	var digits [20]byte
	num := strconv.AppendInt(digits[:0], rev, 10)

	if loc.insert {
		out := make([]byte, 0, len(value)+len(member)+len(num)+1)
		out = append(out, value[:loc.start]...)
		out = append(out, `"resourceVersion":"`...)
		out = append(out, num...)
		out = append(out, '"')
		if loc.nonEmpty {
			out = append(out, ',')
		}
		return append(out, value[loc.start:]...)
	}
	out := make([]byte, 0, len(value)-(loc.end-loc.start)+len(num)+2)
	out = append(out, value[:loc.start]...)
	out = append(out, '"')
	out = append(out, num...)
	out = append(out, '"')
	return append(out, value[loc.end:]...)
}

// equalStamped reports whether stamped equals value stamped with rev at
// loc, without building the stamped copy: GuaranteedUpdate uses it to skip
// writes that would change nothing but the resourceVersion.
func equalStamped(stamped, value []byte, loc rvLocation, rev int64) bool {
	var buf [24]byte
	mid := append(buf[:0], '"')
	if loc.insert {
		mid = append(mid, `resourceVersion":"`...)
	}
	mid = strconv.AppendInt(mid, rev, 10)
	mid = append(mid, '"')
	suffixStart := loc.end
	if loc.insert {
		suffixStart = loc.start
		if loc.nonEmpty {
			mid = append(mid, ',')
		}
	}
	prefix, suffix := value[:loc.start], value[suffixStart:]
	if len(stamped) != len(prefix)+len(mid)+len(suffix) {
		return false
	}
	return bytes.Equal(stamped[:len(prefix)], prefix) &&
		bytes.Equal(stamped[len(prefix):len(prefix)+len(mid)], mid) &&
		bytes.Equal(stamped[len(prefix)+len(mid):], suffix)
}

// locateRevision finds where the resourceVersion goes in value. It scans
// the top-level object member by member, skipping every other value
// (strings with their escapes, nested objects and arrays) so that a
// "metadata" inside a string or a nested object is never taken for the
// top-level one. The first top-level "metadata" member wins.
func locateRevision(value []byte) (rvLocation, error) {
	s := scanner{buf: value}
	s.skipSpace()
	if !s.consume('{') {
		return rvLocation{}, ErrInvalidObject
	}
	for {
		s.skipSpace()
		if s.consume('}') {
			return rvLocation{}, ErrInvalidObject
		}
		key, ok := s.key()
		if !ok {
			return rvLocation{}, ErrInvalidObject
		}
		if key == keyMetadata {
			s.skipSpace()
			if !s.consume('{') {
				return rvLocation{}, ErrInvalidObject
			}
			return s.locateInMetadata()
		}
		s.skipSpace()
		if !s.skipValue() {
			return rvLocation{}, ErrInvalidObject
		}
		s.skipSpace()
		if !s.consume(',') {
			return rvLocation{}, ErrInvalidObject
		}
	}
}

// locateInMetadata scans the members of the metadata object, the scanner
// just past its '{'.
func (s *scanner) locateInMetadata() (rvLocation, error) {
	open := s.pos
	for first := true; ; first = false {
		s.skipSpace()
		if s.consume('}') {
			if !first {
				// A trailing comma: `{"a":1,}` is not JSON.
				return rvLocation{}, ErrInvalidObject
			}
			return rvLocation{start: open, insert: true}, nil
		}
		key, ok := s.key()
		if !ok {
			return rvLocation{}, ErrInvalidObject
		}
		s.skipSpace()
		start := s.pos
		if !s.skipValue() {
			return rvLocation{}, ErrInvalidObject
		}
		if key == keyResourceVersion {
			return rvLocation{start: start, end: s.pos}, nil
		}
		s.skipSpace()
		if s.consume('}') {
			return rvLocation{start: open, insert: true, nonEmpty: true}, nil
		}
		if !s.consume(',') {
			return rvLocation{}, ErrInvalidObject
		}
	}
}

// keyKind classifies the object keys locateRevision cares about.
type keyKind uint8

const (
	keyOther keyKind = iota
	keyMetadata
	keyResourceVersion
	keyUID
)

// scanner is a minimal JSON tokenizer over one value: enough to find
// members by key and to skip values without decoding them.
type scanner struct {
	buf []byte
	pos int
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.pos < len(s.buf) && s.buf[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// key reads a member name and the ':' after it and classifies the name.
func (s *scanner) key() (keyKind, bool) {
	start := s.pos
	escaped, ok := s.skipString()
	if !ok {
		return keyOther, false
	}
	end := s.pos
	raw := s.buf[start+1 : end-1]
	s.skipSpace()
	if !s.consume(':') {
		return keyOther, false
	}
	if escaped {
		// Rare: a name spelled with escapes ("meta\u0064ata") still names
		// the member for a JSON decoder, so decode before comparing.
		var name string
		if err := json.Unmarshal(s.buf[start:end], &name); err != nil {
			return keyOther, true
		}
		raw = []byte(name)
	}
	switch string(raw) {
	case "metadata":
		return keyMetadata, true
	case "resourceVersion":
		return keyResourceVersion, true
	case "uid":
		return keyUID, true
	}
	return keyOther, true
}

// skipString skips a string starting at s.pos ('"'), reporting whether it
// held any escape.
func (s *scanner) skipString() (escaped, ok bool) {
	if !s.consume('"') {
		return false, false
	}
	for s.pos < len(s.buf) {
		// Jump to the next quote or backslash.
		i := bytes.IndexAny(s.buf[s.pos:], `"\`)
		if i < 0 {
			break
		}
		s.pos += i
		if s.buf[s.pos] == '"' {
			s.pos++
			return escaped, true
		}
		// A backslash escapes the next byte; \uXXXX needs no special care
		// since its hex digits are neither quote nor backslash.
		escaped = true
		s.pos += 2
	}
	s.pos = len(s.buf)
	return escaped, false
}

// skipValue skips one JSON value of any type. Nested objects and arrays are
// skipped by depth, their strings with skipString so that brackets and
// quotes inside strings do not count.
func (s *scanner) skipValue() bool {
	if s.pos >= len(s.buf) {
		return false
	}
	switch s.buf[s.pos] {
	case '"':
		_, ok := s.skipString()
		return ok
	case '{', '[':
		depth := 0
		for s.pos < len(s.buf) {
			switch s.buf[s.pos] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return true
				}
			case '"':
				if _, ok := s.skipString(); !ok {
					return false
				}
				continue
			}
			s.pos++
		}
		return false
	default:
		// A number, true, false or null: runs to the next delimiter.
		start := s.pos
		for s.pos < len(s.buf) {
			switch s.buf[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.pos > start
			}
			s.pos++
		}
		return false
	}
}
