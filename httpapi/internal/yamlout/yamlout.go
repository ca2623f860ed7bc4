// Package yamlout converts JSON to the YAML kube-apiserver answers with:
// the bytes of sigs.k8s.io/yaml.JSONToYAML, which reads the JSON with
// encoding/json (numbers as go-yaml reads them: int, then uint64, then
// float64) and writes it with go-yaml v2 (go.yaml.in/yaml/v2 v2.4.3).
//
// go-yaml's encoder keeps every event of a document until the document
// ends, hundreds of bytes a value; this package writes as it reads. A
// first pass validates the JSON and notes where each array and object
// ends; the second walks the values, holding only the members of the
// objects it is inside of (to sort them as go-yaml does), and writes the
// YAML with go-yaml's layout rules (see emit.go, order.go, resolve.go).
//
// Keys longer than 1,024 bytes, which go-yaml's parser refuses, are
// written like any other key (sigs.k8s.io/yaml.JSONToYAML fails on them).
package yamlout

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Append appends to dst the YAML of the first JSON value in src and
// returns the extended buffer. Like encoding/json's Decoder, it reads only
// that value: what follows it is ignored. It fails where encoding/json
// fails: on invalid JSON and on arrays and objects nested more than
// 10,000 deep.
func Append(dst, src []byte) ([]byte, error) {
	doc, err := scanDocument(src)
	if err != nil {
		return dst, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	c := converter{
		emitter:    emitter{out: dst, indent: -1, whitespace: true, indention: true},
		src:        src,
		containers: doc.containers,
		members:    make([]member, 0, doc.maxMembers),
	}
	// A sixteenth more for folded lines. Deep nesting can make the
	// estimate a multiple of the YAML: beyond twice the JSON, the buffer
	// doubles as needed instead.
	c.grow(min(doc.yamlSize+doc.yamlSize/16, 2*len(src)+4096) + 64)
	c.node(skipSpace(src, 0), 0, atRoot)
	c.writeIndent() // the document's end
	return c.out, nil
}

// member is one member of an object being written.
type member struct {
	key    uint32 // offset of the key's text in src, or in arena with keyInArena
	keyLen uint32 // with memberDropped when a later member has the same key
	val    uint32 // offset of a scalar value in src, or valContainer and its ordinal
}

const (
	keyInArena    = 1 << 31
	memberDropped = 1 << 31
	valContainer  = 1 << 31
)

// place is where a node is written, as far as its layout depends on it.
type place uint8

const (
	atRoot place = iota
	inSequence
	asMappingValue
)

// converter holds the second pass's state.
type converter struct {
	emitter
	src        []byte
	containers containerIndex
	members    []member // a stack: the objects being written
	arena      []byte   // keys that differ from their JSON text
	text       []byte   // the decoded string being written
	scratch    []byte
	byBytes    []int
}

// node writes the value at src[pos]; ord is its ordinal if it is an array
// or object.
func (c *converter) node(pos, ord int, at place) {
	switch c.src[pos] {
	case '{':
		c.mapping(ord, at)
	case '[':
		c.sequence(ord, at)
	case '"':
		text, _, buf := decodeString(c.src, pos, c.text[:0])
		c.text = buf
		c.stringScalar(text, false)
	case 't':
		c.plainScalar([]byte("true"))
	case 'f':
		c.plainScalar([]byte("false"))
	case 'n':
		c.plainScalar([]byte("null"))
	default:
		c.number(pos)
	}
}

// valueEnd returns where the scalar at pos ends.
func (c *converter) valueEnd(pos int) int {
	switch c.src[pos] {
	case '"':
		return stringEnd(c.src, pos)
	case 't', 'n':
		return pos + 4
	case 'f':
		return pos + 5
	}
	end, _ := scanNumber(c.src, pos)
	return end
}

func (c *converter) plainScalar(text []byte) {
	c.scalar(text, plainStyle, analyze(text), false)
}

// stringScalar writes a string, in the style go-yaml's encoder asks for:
// literal when it has a line feed, plain when it reads back as the same
// string, else double-quoted. The emitter may then change it (scalar).
func (c *converter) stringScalar(text []byte, simpleKey bool) {
	c.scalar(text, c.stringStyle(text), analyze(text), simpleKey)
}

func (c *converter) stringStyle(text []byte) style {
	if bytes.IndexByte(text, '\n') >= 0 {
		return literalStyle
	}
	ok, scratch := plainIsString(text, c.scratch)
	c.scratch = scratch
	if ok && !isBase60Float(text) {
		return plainStyle
	}
	return doubleQuotedStyle
}

// number writes a JSON number as the int, uint64 or float64 go-yaml reads
// it as, or as the string it is when none holds it (1e400).
func (c *converter) number(pos int) {
	end, _ := scanNumber(c.src, pos)
	num := c.src[pos:end]
	var buf [32]byte
	var text []byte
	if bytes.IndexAny(num, ".eE") < 0 {
		if i, err := strconv.ParseInt(unsafeString(num), 10, 64); err == nil {
			text = strconv.AppendInt(buf[:0], i, 10)
		} else if u, err := strconv.ParseUint(unsafeString(num), 10, 64); err == nil {
			text = strconv.AppendUint(buf[:0], u, 10)
		}
	}
	if text == nil {
		if f, err := strconv.ParseFloat(unsafeString(num), 64); err == nil {
			switch {
			case math.IsInf(f, 1):
				text = append(buf[:0], ".inf"...)
			case math.IsInf(f, -1):
				text = append(buf[:0], "-.inf"...)
			case math.IsNaN(f):
				text = append(buf[:0], ".nan"...)
			default:
				text = strconv.AppendFloat(buf[:0], f, 'g', -1, 64)
			}
		}
	}
	if text == nil {
		c.stringScalar(num, false)
		return
	}
	c.plainScalar(text)
}

// sequence writes the array with ordinal ord: "[]" when empty, else one
// "- " item a line (not indented under a mapping key).
func (c *converter) sequence(ord int, at place) {
	pos := skipSpace(c.src, int(c.containers.at(ord).start)+1)
	if c.src[pos] == ']' {
		c.writeIndicator("[", true, true, false)
		c.writeIndicator("]", false, false, false)
		return
	}
	saved := c.pushIndent(false, at == asMappingValue && !c.indention)
	next := ord + 1
	for {
		c.writeIndent()
		c.writeIndicator("-", true, false, true)
		if b := c.src[pos]; b == '{' || b == '[' {
			elem := next
			next = int(c.containers.at(elem).after)
			c.node(pos, elem, inSequence)
			pos = int(c.containers.at(elem).end)
		} else {
			c.node(pos, 0, inSequence)
			pos = c.valueEnd(pos)
		}
		pos = skipSpace(c.src, pos)
		if c.src[pos] == ']' {
			break
		}
		pos = skipSpace(c.src, pos+1)
	}
	c.indent = saved
}

// mapping writes the object with ordinal ord: "{}" when empty, else its
// members in go-yaml's key order, the last of equal keys only.
func (c *converter) mapping(ord int, at place) {
	pos := skipSpace(c.src, int(c.containers.at(ord).start)+1)
	if c.src[pos] == '}' {
		c.writeIndicator("{", true, true, false)
		c.writeIndicator("}", false, false, false)
		return
	}
	lo, arenaLo := len(c.members), len(c.arena)
	risky := false
	next := ord + 1
	for {
		text, end, buf := decodeString(c.src, pos, c.text[:0])
		c.text = buf
		m := member{key: uint32(pos + 1), keyLen: uint32(len(text))}
		if len(buf) > 0 {
			m.key = uint32(len(c.arena)) | keyInArena
			c.arena = append(c.arena, text...)
		}
		risky = risky || riskyKey(text)
		pos = skipSpace(c.src, skipSpace(c.src, end)+1)
		if b := c.src[pos]; b == '{' || b == '[' {
			m.val = uint32(next) | valContainer
			pos = int(c.containers.at(next).end)
			next = int(c.containers.at(next).after)
		} else {
			m.val = uint32(pos)
			pos = c.valueEnd(pos)
		}
		c.members = append(c.members, m)
		pos = skipSpace(c.src, pos)
		if c.src[pos] == '}' {
			break
		}
		pos = skipSpace(c.src, pos+1)
	}
	c.sortMembers(lo, risky)

	saved := c.pushIndent(false, false)
	for k := lo; k < len(c.members); k++ {
		m := c.members[k]
		if m.keyLen&memberDropped != 0 {
			continue
		}
		c.writeIndent()
		c.key(c.keyText(m))
		pos, ord := int(m.val), 0
		if m.val&valContainer != 0 {
			ord = int(m.val &^ valContainer)
			pos = int(c.containers.at(ord).start)
		}
		c.node(pos, ord, asMappingValue)
	}
	c.indent = saved
	c.members = c.members[:lo]
	c.arena = c.arena[:arenaLo]
}

// key writes a mapping key and its ":": on one line when it has no line
// break and is at most 128 bytes, else as a "? " complex key.
func (c *converter) key(text []byte) {
	want, a := c.stringStyle(text), analyze(text)
	if !a.multiline && len(text) <= 128 {
		c.scalar(text, want, a, true)
		c.writeIndicator(":", false, false, false)
		return
	}
	c.writeIndicator("?", true, false, true)
	c.scalar(text, want, a, false)
	c.writeIndent()
	c.writeIndicator(":", true, false, true)
}

func (c *converter) keyText(m member) []byte {
	n := m.keyLen &^ memberDropped
	if m.key&keyInArena != 0 {
		off := m.key &^ keyInArena
		return c.arena[off : off+n]
	}
	return c.src[m.key : m.key+n]
}

// position returns where m's value starts in src: members with equal keys
// keep their document order.
func (c *converter) position(m member) uint32 {
	if m.val&valContainer != 0 {
		return c.containers.at(int(m.val &^ valContainer)).start
	}
	return m.val
}

// sortMembers puts the members from lo on in go-yaml's key order and
// drops all but the last of equal keys (encoding/json keeps the last).
func (c *converter) sortMembers(lo int, risky bool) {
	ms := c.members[lo:]
	slices.SortFunc(ms, func(a, b member) int {
		if r := compareKeys(c.keyText(a), c.keyText(b)); r != 0 {
			return r
		}
		return int(c.position(a)) - int(c.position(b))
	})
	if !risky {
		// A total order: equal keys are side by side, in document order.
		for i := 0; i+1 < len(ms); i++ {
			if bytes.Equal(c.keyText(ms[i]), c.keyText(ms[i+1])) {
				ms[i].keyLen |= memberDropped
			}
		}
		return
	}
	// compareKeys may not be a strict weak order on these keys: find
	// equal keys by their bytes.
	order := c.byBytes[:0]
	for i := range ms {
		order = append(order, i)
	}
	slices.SortFunc(order, func(i, j int) int {
		if r := bytes.Compare(c.keyText(ms[i]), c.keyText(ms[j])); r != 0 {
			return r
		}
		return int(c.position(ms[i])) - int(c.position(ms[j]))
	})
	for k := 0; k+1 < len(order); k++ {
		if bytes.Equal(c.keyText(ms[order[k]]), c.keyText(ms[order[k+1]])) {
			ms[order[k]].keyLen |= memberDropped
		}
	}
	c.byBytes = order[:0]
}
