package yamlout

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's bound on nested arrays and objects: one
// more is an error there, and so here.
const maxDepth = 10000

// maxInput bounds the input so that offsets fit the 31 bits a member
// keeps for them.
const maxInput = 1<<31 - 1

// container is one array or object of the input, found by the first
// pass so that the second can step over it without reading it again.
type container struct {
	start uint32 // offset of '[' or '{'
	end   uint32 // offset just past the closing bracket
	after uint32 // ordinal of the first container after this one's subtree
}

// openContainer is a container the first pass is inside of.
type openContainer struct {
	ord     uint32
	object  bool
	members uint32 // members read so far (objects)
	deepest uint32 // the largest member stack a child needs
}

// containerIndex holds containers by ordinal, in chunks, so that a large
// index is never copied whole to grow.
type containerIndex struct {
	chunks [][]container
	n      int
}

const containerChunk = 1024

func (x *containerIndex) add(c container) {
	switch {
	case x.n == 0:
		x.chunks = append(x.chunks, nil) // small documents: grown by append
	case x.n%containerChunk == 0:
		x.chunks = append(x.chunks, make([]container, 0, containerChunk))
	}
	last := &x.chunks[len(x.chunks)-1]
	*last = append(*last, c)
	x.n++
}

func (x *containerIndex) at(ord int) *container {
	return &x.chunks[ord/containerChunk][ord%containerChunk]
}

// document is the first pass's result: where the first JSON value ends,
// its containers in document order, the most object members the second
// pass holds at once (an object's members with those of every object
// around it), and about how long the YAML is (the JSON, plus indentation
// and "- " for each value).
type document struct {
	end        int
	containers containerIndex
	maxMembers int
	yamlSize   int
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipSpace(src []byte, pos int) int {
	for pos < len(src) && isSpace(src[pos]) {
		pos++
	}
	return pos
}

var errUnexpectedEnd = errors.New("unexpected end of JSON input")

func syntaxError(src []byte, pos int, context string) error {
	if pos >= len(src) {
		return errUnexpectedEnd
	}
	return fmt.Errorf("invalid character %q %s at offset %d", src[pos], context, pos)
}

// scanDocument validates the first JSON value of src the way
// encoding/json's Decoder reads it (what follows the value is not read,
// except that a number ends at the first byte that cannot continue it)
// and indexes its containers.
func scanDocument(src []byte) (document, error) {
	var doc document
	if len(src) > maxInput {
		return doc, errors.New("input too large")
	}
	pos := skipSpace(src, 0)
	if pos == len(src) {
		return doc, io.EOF
	}
	var stack []openContainer
	// closeTop ends the innermost container at pos (its closing bracket).
	closeTop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ct := doc.containers.at(int(top.ord))
		ct.end = uint32(pos + 1)
		ct.after = uint32(doc.containers.n)
		need := top.deepest
		if top.object {
			need += top.members
		}
		if len(stack) == 0 {
			doc.maxMembers = int(need)
		} else if p := &stack[len(stack)-1]; need > p.deepest {
			p.deepest = need
		}
	}
	// readKey reads an object's key and its colon at pos.
	readKey := func() error {
		pos = skipSpace(src, pos)
		if pos >= len(src) || src[pos] != '"' {
			return syntaxError(src, pos, "looking for beginning of object key string")
		}
		end, err := scanString(src, pos)
		if err != nil {
			return err
		}
		pos = skipSpace(src, end)
		if pos >= len(src) || src[pos] != ':' {
			return syntaxError(src, pos, "after object key")
		}
		pos++
		stack[len(stack)-1].members++
		return nil
	}
	for {
		// A value starts at pos (after spaces).
		pos = skipSpace(src, pos)
		if pos >= len(src) {
			return doc, errUnexpectedEnd
		}
		if depth := len(stack); depth > 0 {
			doc.yamlSize += 2 * (depth - 1)
			if stack[depth-1].object {
				doc.yamlSize++
			} else {
				doc.yamlSize += 2
			}
		}
		switch c := src[pos]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return doc, fmt.Errorf("exceeded max depth at offset %d", pos)
			}
			stack = append(stack, openContainer{ord: uint32(doc.containers.n), object: c == '{'})
			doc.containers.add(container{start: uint32(pos)})
			pos = skipSpace(src, pos+1)
			if pos < len(src) && (src[pos] == '}' && c == '{' || src[pos] == ']' && c == '[') {
				closeTop()
				pos++
				break
			}
			if c == '{' {
				if err := readKey(); err != nil {
					return doc, err
				}
			}
			continue
		case '"':
			end, err := scanString(src, pos)
			if err != nil {
				return doc, err
			}
			pos = end
		case 't', 'f', 'n':
			end, err := scanLiteral(src, pos)
			if err != nil {
				return doc, err
			}
			pos = end
		default:
			end, err := scanNumber(src, pos)
			if err != nil {
				return doc, err
			}
			pos = end
		}
		// A value ended at pos: close containers until one continues.
		for {
			if len(stack) == 0 {
				doc.end = pos
				doc.yamlSize += pos
				return doc, nil
			}
			pos = skipSpace(src, pos)
			if pos >= len(src) {
				return doc, errUnexpectedEnd
			}
			top := stack[len(stack)-1]
			if c := src[pos]; c == ',' {
				pos++
				if top.object {
					if err := readKey(); err != nil {
						return doc, err
					}
				}
				break
			} else if c == '}' && top.object || c == ']' && !top.object {
				closeTop()
				pos++
				continue
			}
			if top.object {
				return doc, syntaxError(src, pos, "after object key:value pair")
			}
			return doc, syntaxError(src, pos, "after array element")
		}
	}
}

// scanLiteral reads true, false or null at pos and returns its end.
func scanLiteral(src []byte, pos int) (int, error) {
	var word string
	switch src[pos] {
	case 't':
		word = "true"
	case 'f':
		word = "false"
	default:
		word = "null"
	}
	for i := 1; i < len(word); i++ {
		if pos+i >= len(src) {
			return 0, errUnexpectedEnd
		}
		if src[pos+i] != word[i] {
			return 0, syntaxError(src, pos+i, "in literal "+word)
		}
	}
	return pos + len(word), nil
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber reads a JSON number at pos and returns its end: the first
// byte that cannot continue it. A number cut short ("1.", "-", "1e+")
// is an error, as it is for encoding/json.
func scanNumber(src []byte, pos int) (int, error) {
	i := pos
	if src[i] == '-' {
		i++
	}
	if i >= len(src) {
		return 0, errUnexpectedEnd
	}
	switch {
	case src[i] == '0':
		i++
	case '1' <= src[i] && src[i] <= '9':
		for i++; i < len(src) && isDigitByte(src[i]); i++ {
		}
	default:
		if i == pos {
			return 0, syntaxError(src, i, "looking for beginning of value")
		}
		return 0, syntaxError(src, i, "in numeric literal")
	}
	digits := func(context string) error {
		if i >= len(src) {
			return errUnexpectedEnd
		}
		if !isDigitByte(src[i]) {
			return syntaxError(src, i, context)
		}
		for i++; i < len(src) && isDigitByte(src[i]); i++ {
		}
		return nil
	}
	if i < len(src) && src[i] == '.' {
		i++
		if err := digits("after decimal point in numeric literal"); err != nil {
			return 0, err
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if err := digits("in exponent of numeric literal"); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// scanString checks the JSON string at pos and returns its end (just past
// the closing quote).
func scanString(src []byte, pos int) (int, error) {
	for i := pos + 1; i < len(src); i++ {
		switch c := src[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(src) {
				return 0, errUnexpectedEnd
			}
			switch src[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(src) {
						return 0, errUnexpectedEnd
					}
					if !isHex(src[i+k]) {
						return 0, syntaxError(src, i+k, "in \\u hexadecimal character escape")
					}
				}
				i += 4
			default:
				return 0, syntaxError(src, i, "in string escape code")
			}
		case c < 0x20:
			return 0, syntaxError(src, i, "in string literal")
		}
	}
	return 0, errUnexpectedEnd
}

func isHex(c byte) bool {
	return isDigitByte(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexValue(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c <= 'F':
		return rune(c - 'A' + 10)
	}
	return rune(c - 'a' + 10)
}

// stringEnd returns the end of the (valid) string at pos.
func stringEnd(src []byte, pos int) int {
	for i := pos + 1; ; i++ {
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
}

// decodeString returns the text of the (valid) JSON string at pos, as
// encoding/json decodes it (each byte of invalid UTF-8 and each unpaired
// surrogate becomes U+FFFD), and the string's end. The text is a slice of
// src when nothing needs changing, else it is appended to buf.
func decodeString(src []byte, pos int, buf []byte) (text []byte, end int, newBuf []byte) {
	i := pos + 1
	for i < len(src) && src[i] != '"' && src[i] != '\\' && src[i] < utf8.RuneSelf {
		i++
	}
	if src[i] == '"' {
		return src[pos+1 : i], i + 1, buf
	}
	start := len(buf)
	buf = append(buf, src[pos+1:i]...)
	for {
		c := src[i]
		switch {
		case c == '"':
			return buf[start:], i + 1, buf
		case c == '\\':
			i++
			switch src[i] {
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r := escapedRune(src, i-1)
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+2 < len(src) && src[i+1] == '\\' && src[i+2] == 'u' {
						r2 = escapedRune(src, i+1)
					}
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						r = pair
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default: // '"', '\\', '/'
				buf = append(buf, src[i])
			}
			i++
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, src[i:i+size]...)
			}
			i += size
		}
	}
}

// escapedRune returns the rune of the \uXXXX escape at pos (the
// backslash); the escape is valid.
func escapedRune(src []byte, pos int) rune {
	var r rune
	for k := 2; k < 6; k++ {
		r = r<<4 | hexValue(src[pos+k])
	}
	return r
}
