package store

import (
	"bytes"
	"encoding/json"
)

// MetadataUID returns metadata.uid of an object's JSON, "" when it has
// none or value is not a JSON object. It scans as StampRevision does,
// member by member without decoding, so that a "uid" elsewhere (an owner
// reference's, or one inside a string) is never taken for it.
func MetadataUID(value []byte) string {
	s := scanner{buf: value}
	s.skipSpace()
	if !s.consume('{') {
		return ""
	}
	for {
		s.skipSpace()
		if s.consume('}') {
			return ""
		}
		key, ok := s.key()
		if !ok {
			return ""
		}
		s.skipSpace()
		if key == keyMetadata {
			if !s.consume('{') {
				return ""
			}
			return s.uidInMetadata()
		}
		if !s.skipValue() {
			return ""
		}
		s.skipSpace()
		if !s.consume(',') {
			return ""
		}
	}
}

// uidInMetadata scans the members of the metadata object, the scanner
// just past its '{', for "uid".
func (s *scanner) uidInMetadata() string {
	for {
		s.skipSpace()
		if s.consume('}') {
			return ""
		}
		key, ok := s.key()
		if !ok {
			return ""
		}
		s.skipSpace()
		start := s.pos
		if !s.skipValue() {
			return ""
		}
		if key == keyUID {
			raw := s.buf[start:s.pos]
			if len(raw) < 2 || raw[0] != '"' {
				return ""
			}
			if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 {
				return string(body)
			}
			var uid string
			if json.Unmarshal(raw, &uid) != nil {
				return ""
			}
			return uid
		}
		s.skipSpace()
		if !s.consume(',') {
			return ""
		}
	}
}
