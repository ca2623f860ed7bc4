package httpapi

import (
	"bytes"
	stdencoding "encoding"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/registry"
)

// A protoTranscoder writes the Protobuf of a built-in object straight from
// its stored JSON, without the typed Go struct in between: decoding into
// the struct with encoding/json was nine tenths of a Protobuf LIST's cost.
// What it writes is what the generated Marshal writes for the struct that
// encoding/json would decode: the plan of each Go type is read from its
// protobuf and json struct tags (no kind is named here), fields come in
// field-number order, fields absent from the JSON are written as the
// generated code writes their zero value (taken from a Marshal of the
// zero struct), maps in key order. Types with JSON methods of their own
// (Quantity, IntOrString, RawExtension, FieldsV1 and the like) are decoded
// by those methods and marshalled by their generated code; Time and
// MicroTime are parsed as their UnmarshalJSON parses them.
//
// Anything it is not sure to write as the typed path would (duplicate
// keys, keys that match a field only case-insensitively, escapes in keys,
// nulls in lists, numbers that do not fit, and any error) makes it give
// up, and the caller takes the typed path; TestProtoTranscoder_MatchesTyped
// and FuzzProtoTranscoder hold the two to the same bytes.

// errProtoFallback means: use the typed path.
var errProtoFallback = errors.New("protobuf transcoder: take the typed path")

// protoValueKind is how one Go type is written.
type protoValueKind uint8

const (
	pvString  protoValueKind = iota + 1 // string kinds: length-delimited
	pvBytes                             // []byte: base64 in JSON
	pvBool                              // varint 0 or 1
	pvInt                               // signed integer kinds: varint
	pvUint                              // unsigned integer kinds: varint
	pvFloat64                           // fixed64
	pvMessage                           // a struct with its own plan
	pvCustom                            // JSON and Protobuf methods of its own
)

// protoType is the plan of one Go type.
type protoType struct {
	kind protoValueKind
	typ  reflect.Type
	bits int
	msg  *protoMessagePlan // pvMessage
}

// protoField is one field of a message plan.
type protoField struct {
	num  protowire.Number
	name string // the JSON name
	// ptr: a pointer field, written only when not null.
	ptr bool
	// repeated: a slice of elem; isMap: a map of key to elem.
	repeated, isMap bool
	key             *protoType
	elem            *protoType
	// inline is the plan of an embedded struct whose JSON members are
	// the parent's (Volume's VolumeSource).
	inline *protoMessagePlan
	// zero is what the generated code writes for the field when it has
	// its zero value (nil for nothing).
	zero []byte
}

// protoMessagePlan is the plan of a struct.
type protoMessagePlan struct {
	typ    reflect.Type
	fields []*protoField // in field-number order
	// byName maps a JSON name to a field; names of inline members map
	// to the inline field, with the member in member.
	byName map[string]protoMember
	// folded holds every JSON name lowercased: a key that matches one
	// only case-insensitively is left to encoding/json.
	folded map[string]bool
	// jsonOnly holds the JSON names of fields that are not in the
	// Protobuf (TypeMeta's), with their types: their values are still
	// decoded, to fail as encoding/json fails.
	jsonOnly map[string]reflect.Type
}

// protoMember is where a JSON member goes: field index in the plan, and
// for an inline member the index in the inline plan.
type protoMember struct {
	field  int
	member int // -1 unless inline
}

var (
	protoPlansMu sync.Mutex
	protoPlans   = map[reflect.Type]*protoMessagePlan{}
	protoFailed  = map[reflect.Type]bool{}
	// protoKindPlans caches the plan of each kind, or nil.
	protoKindPlans sync.Map // *registry.Kind -> *protoMessagePlan (nil: typed path)
)

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[stdencoding.TextUnmarshaler]()
	protoMessageType    = reflect.TypeFor[protoMessage]()
)

// protoPlanFor returns the plan of k's stored objects, or nil when they
// take the typed path: kinds converted on the way out, custom resources,
// and types with a field the plan cannot write.
func protoPlanFor(k *registry.Kind) *protoMessagePlan {
	if k.Unstructured || k.FromStorage != nil || k.New == nil {
		return nil
	}
	// By kind first: New allocates an object, and this runs per item.
	// Only built-in kinds get here, a fixed set.
	if p, ok := protoKindPlans.Load(k); ok {
		return p.(*protoMessagePlan)
	}
	t := reflect.TypeOf(k.New())
	var p *protoMessagePlan
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Implements(protoMessageType) {
		protoPlansMu.Lock()
		p, _ = buildMessagePlan(t.Elem())
		protoPlansMu.Unlock()
	}
	protoKindPlans.Store(k, p)
	return p
}

// buildMessagePlan makes the plan of struct type t. Callers hold
// protoPlansMu.
func buildMessagePlan(t reflect.Type) (*protoMessagePlan, bool) {
	if p, ok := protoPlans[t]; ok {
		return p, true
	}
	if protoFailed[t] {
		return nil, false
	}
	pt := reflect.PointerTo(t)
	if !pt.Implements(protoMessageType) {
		protoFailed[t] = true
		return nil, false
	}
	p := &protoMessagePlan{typ: t, byName: map[string]protoMember{}, folded: map[string]bool{}, jsonOnly: map[string]reflect.Type{}}
	// Recursive types (JSONSchemaProps) find the plan being built.
	protoPlans[t] = p
	fail := func() (*protoMessagePlan, bool) {
		delete(protoPlans, t)
		protoFailed[t] = true
		return nil, false
	}
	zero, err := reflect.New(t).Interface().(protoMessage).Marshal()
	if err != nil {
		return fail()
	}
	zeros := map[protowire.Number][]byte{}
	for b := zero; len(b) > 0; {
		num, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return fail()
		}
		zeros[num] = append(zeros[num], b[:n]...)
		b = b[n:]
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		jsonTag := sf.Tag.Get("json")
		jsonName, jsonOpts, _ := strings.Cut(jsonTag, ",")
		if jsonName == "-" && jsonOpts == "" {
			continue
		}
		if !sf.IsExported() {
			if sf.Anonymous {
				return fail()
			}
			continue
		}
		pbTag, hasPB := sf.Tag.Lookup("protobuf")
		inline := sf.Anonymous && jsonName == ""
		if !hasPB {
			// Not in the Protobuf: TypeMeta inline, or a JSON-only field.
			if inline {
				ft := sf.Type
				if ft.Kind() != reflect.Struct {
					return fail()
				}
				for j := range ft.NumField() {
					f2 := ft.Field(j)
					if f2.Anonymous {
						return fail()
					}
					n2, _, _ := strings.Cut(f2.Tag.Get("json"), ",")
					if n2 == "-" {
						continue
					}
					if n2 == "" {
						n2 = f2.Name
					}
					p.jsonOnly[n2] = f2.Type
					p.folded[strings.ToLower(n2)] = true
				}
				continue
			}
			if jsonName == "" {
				jsonName = sf.Name
			}
			p.jsonOnly[jsonName] = sf.Type
			p.folded[strings.ToLower(jsonName)] = true
			continue
		}
		f, ok := buildField(sf, pbTag)
		if !ok {
			return fail()
		}
		f.zero = zeros[f.num]
		delete(zeros, f.num)
		if inline {
			st := sf.Type
			if st.Kind() != reflect.Struct || f.ptr || f.repeated || f.isMap {
				return fail()
			}
			sub, ok := buildMessagePlan(st)
			if !ok || len(sub.jsonOnly) > 0 {
				return fail()
			}
			f.inline = sub
		} else if jsonName == "" {
			jsonName = sf.Name
		}
		p.fields = append(p.fields, f)
	}
	if len(zeros) > 0 {
		return fail()
	}
	slices.SortFunc(p.fields, func(a, b *protoField) int { return int(a.num) - int(b.num) })
	for i, f := range p.fields {
		if i > 0 && p.fields[i-1].num == f.num {
			return fail()
		}
		if f.inline != nil {
			for j, g := range f.inline.fields {
				if g.inline != nil {
					return fail()
				}
				if _, dup := p.byName[g.name]; dup {
					return fail()
				}
				p.byName[g.name] = protoMember{field: i, member: j}
				p.folded[strings.ToLower(g.name)] = true
			}
			continue
		}
		if _, dup := p.byName[f.name]; dup {
			return fail()
		}
		p.byName[f.name] = protoMember{field: i, member: -1}
		p.folded[strings.ToLower(f.name)] = true
	}
	for name := range p.jsonOnly {
		if _, dup := p.byName[name]; dup {
			return fail()
		}
	}
	return p, true
}

// buildField makes the plan of one struct field with a protobuf tag.
func buildField(sf reflect.StructField, pbTag string) (*protoField, bool) {
	parts := strings.Split(pbTag, ",")
	if len(parts) < 3 {
		return nil, false
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 {
		return nil, false
	}
	f := &protoField{num: protowire.Number(num)}
	jsonName, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	f.name = jsonName
	// The wire type follows from the Go type: the tags' first word is
	// not always right (ServiceSpec.HealthCheckNodePort says bytes and is
	// a varint).
	t := sf.Type
	switch {
	case t.Kind() == reflect.Map:
		f.isMap = true
		if t.Key().Kind() != reflect.String {
			return nil, false
		}
		kt, ok := buildType(t.Key())
		if !ok {
			return nil, false
		}
		vt, ok := buildType(t.Elem())
		if !ok {
			return nil, false
		}
		f.key, f.elem = kt, vt
		return f, kt.kind == pvString
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && !implementsCustom(t):
		f.repeated = true
		t = t.Elem()
	case t.Kind() == reflect.Pointer:
		f.ptr = true
		t = t.Elem()
	}
	et, ok := buildType(t)
	if !ok {
		return nil, false
	}
	f.elem = et
	return f, true
}

// implementsCustom reports whether t has JSON methods of its own and is
// a Protobuf message.
func implementsCustom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	custom := pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType)
	return custom && (pt.Implements(protoMessageType) || t.Implements(protoMessageType))
}

// buildType makes the plan of a value type.
func buildType(t reflect.Type) (*protoType, bool) {
	pt := reflect.PointerTo(t)
	if pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
		if !implementsCustom(t) {
			return nil, false
		}
		return &protoType{kind: pvCustom, typ: t}, true
	}
	switch t.Kind() {
	case reflect.String:
		return &protoType{kind: pvString, typ: t}, true
	case reflect.Bool:
		return &protoType{kind: pvBool, typ: t}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &protoType{kind: pvInt, typ: t, bits: t.Bits()}, true
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &protoType{kind: pvUint, typ: t, bits: t.Bits()}, true
	case reflect.Float64:
		return &protoType{kind: pvFloat64, typ: t}, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &protoType{kind: pvBytes, typ: t}, true
		}
		if implementsCustom(t) {
			return &protoType{kind: pvCustom, typ: t}, true
		}
	case reflect.Struct:
		p, ok := buildMessagePlan(t)
		if !ok {
			return nil, false
		}
		return &protoType{kind: pvMessage, typ: t, msg: p}, true
	}
	return nil, false
}

// protoSpan is one field's encoding in a level's scratch buffer.
type protoSpan struct {
	field, member int
	start, end    int
	// key orders map entries.
	key string
}

// protoLevel is the scratch of one nesting level.
type protoLevel struct {
	fields []byte
	spans  []protoSpan
	out    []byte
}

// protoTranscoder writes objects of one plan; it keeps its scratch
// buffers between objects.
type protoTranscoder struct {
	levels []protoLevel
	// in is the JSON being read, pos the read position.
	in  []byte
	pos int
	// custom holds a value of each custom type to decode into.
	custom map[reflect.Type]reflect.Value
}

var protoTranscoders = sync.Pool{New: func() any { return &protoTranscoder{} }}

// appendProtoJSON appends the object whose stored JSON is value as field
// num of a message, or returns errProtoFallback (or another error) with
// dst as it was.
func appendProtoJSON(dst []byte, num protowire.Number, p *protoMessagePlan, value []byte) ([]byte, error) {
	t := protoTranscoders.Get().(*protoTranscoder)
	defer protoTranscoders.Put(t)
	t.in, t.pos = value, 0
	defer func() { t.in = nil }()
	t.skipSpace()
	lv := t.level(0)
	body, err := t.message(lv.out[:0], p, 0)
	t.levels[0].out = body[:0]
	if err != nil {
		return dst, err
	}
	t.skipSpace()
	if t.pos != len(t.in) {
		return dst, errProtoFallback
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, body), nil
}

// protoJSONSize is the size of the message appendProtoJSON writes for
// value (without its tag and length), or an error where appendProtoJSON
// gives one: the same walk, without the copy of the message into a
// caller's buffer.
func protoJSONSize(p *protoMessagePlan, value []byte) (int, error) {
	t := protoTranscoders.Get().(*protoTranscoder)
	defer protoTranscoders.Put(t)
	t.in, t.pos = value, 0
	defer func() { t.in = nil }()
	t.skipSpace()
	lv := t.level(0)
	body, err := t.message(lv.out[:0], p, 0)
	t.levels[0].out = body[:0]
	if err != nil {
		return 0, err
	}
	t.skipSpace()
	if t.pos != len(t.in) {
		return 0, errProtoFallback
	}
	return len(body), nil
}

func (t *protoTranscoder) level(depth int) *protoLevel {
	for len(t.levels) <= depth {
		t.levels = append(t.levels, protoLevel{})
	}
	return &t.levels[depth]
}

// message reads a JSON object (or null) of plan p and appends its
// message body to dst.
func (t *protoTranscoder) message(dst []byte, p *protoMessagePlan, depth int) ([]byte, error) {
	if depth > 64 {
		return dst, errProtoFallback
	}
	if t.literal("null") {
		return t.zeroMessage(dst, p), nil
	}
	if !t.consume('{') {
		return dst, errProtoFallback
	}
	lv := t.level(depth)
	lv.fields, lv.spans = lv.fields[:0], lv.spans[:0]
	t.skipSpace()
	if !t.consume('}') {
		for {
			t.skipSpace()
			key, ok := t.plainString()
			if !ok {
				return dst, errProtoFallback
			}
			t.skipSpace()
			if !t.consume(':') {
				return dst, errProtoFallback
			}
			t.skipSpace()
			m, found := p.byName[string(key)]
			switch {
			case found:
				f := p.fields[m.field]
				if m.member >= 0 {
					f = f.inline.fields[m.member]
				}
				start := len(lv.fields)
				b, err := t.field(lv.fields, f, depth)
				lv = &t.levels[depth] // t.levels may have grown
				if err != nil {
					return dst, err
				}
				lv.fields = b
				lv.spans = append(lv.spans, protoSpan{field: m.field, member: m.member, start: start, end: len(b)})
			case p.jsonOnly[string(key)] != nil:
				raw, ok := t.skipValue()
				if !ok {
					return dst, errProtoFallback
				}
				v := reflect.New(p.jsonOnly[string(key)])
				if err := json.Unmarshal(raw, v.Interface()); err != nil {
					return dst, errProtoFallback
				}
			default:
				if !isASCII(key) || p.folded[strings.ToLower(string(key))] {
					return dst, errProtoFallback
				}
				if _, ok := t.skipValue(); !ok {
					return dst, errProtoFallback
				}
			}
			t.skipSpace()
			if t.consume(',') {
				continue
			}
			if t.consume('}') {
				break
			}
			return dst, errProtoFallback
		}
	}
	// Field order: the spans sorted by field, then inline member.
	spans := lv.spans
	slices.SortStableFunc(spans, func(a, b protoSpan) int {
		if a.field != b.field {
			return a.field - b.field
		}
		return a.member - b.member
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].field == spans[i-1].field && spans[i].member == spans[i-1].member {
			return dst, errProtoFallback // a duplicate key
		}
	}
	si := 0
	for fi, f := range p.fields {
		if f.inline != nil {
			// The inline struct's members, as a message of their own.
			var body []byte
			if si < len(spans) && spans[si].field == fi {
				next := t.level(depth + 1)
				lv = &t.levels[depth]
				body = next.out[:0]
				for mi, g := range f.inline.fields {
					if si < len(spans) && spans[si].field == fi && spans[si].member == mi {
						body = append(body, lv.fields[spans[si].start:spans[si].end]...)
						si++
					} else {
						body = append(body, g.zero...)
					}
				}
				next.out = body
			} else {
				dst = append(dst, f.zero...)
				continue
			}
			dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, body)
			continue
		}
		if si < len(spans) && spans[si].field == fi {
			dst = append(dst, lv.fields[spans[si].start:spans[si].end]...)
			si++
			continue
		}
		dst = append(dst, f.zero...)
	}
	return dst, nil
}

// zeroMessage appends the body of p's zero value.
func (t *protoTranscoder) zeroMessage(dst []byte, p *protoMessagePlan) []byte {
	for _, f := range p.fields {
		dst = append(dst, f.zero...)
	}
	return dst
}

// field reads the JSON value of field f and appends the field's
// encoding (nothing for a null pointer, slice or map; the zero for a
// null value).
func (t *protoTranscoder) field(dst []byte, f *protoField, depth int) ([]byte, error) {
	switch {
	case f.isMap:
		return t.mapField(dst, f, depth)
	case f.repeated:
		if t.literal("null") {
			return dst, nil
		}
		if !t.consume('[') {
			return dst, errProtoFallback
		}
		t.skipSpace()
		if t.consume(']') {
			return dst, nil
		}
		for {
			t.skipSpace()
			if t.peekLiteral("null") {
				return dst, errProtoFallback
			}
			var err error
			if dst, err = t.value(dst, f.num, f.elem, depth); err != nil {
				return dst, err
			}
			t.skipSpace()
			if t.consume(',') {
				continue
			}
			if t.consume(']') {
				return dst, nil
			}
			return dst, errProtoFallback
		}
	case f.ptr:
		if t.literal("null") {
			return dst, nil
		}
		return t.value(dst, f.num, f.elem, depth)
	}
	if f.elem.kind != pvCustom && f.elem.kind != pvMessage && t.literal("null") {
		return append(dst, f.zero...), nil
	}
	return t.value(dst, f.num, f.elem, depth)
}

// mapField reads a JSON object into map entries, sorted by key.
func (t *protoTranscoder) mapField(dst []byte, f *protoField, depth int) ([]byte, error) {
	if t.literal("null") {
		return dst, nil
	}
	if !t.consume('{') {
		return dst, errProtoFallback
	}
	t.skipSpace()
	if t.consume('}') {
		return dst, nil
	}
	// The entries are gathered in the next level's scratch, which no
	// message uses until a value's own.
	lv := t.level(depth + 1)
	lv.spans = lv.spans[:0]
	entries := lv.fields[:0]
	for {
		t.skipSpace()
		key, ok := t.stringValue()
		if !ok {
			return dst, errProtoFallback
		}
		t.skipSpace()
		if !t.consume(':') {
			return dst, errProtoFallback
		}
		t.skipSpace()
		start := len(entries)
		entries = protowire.AppendTag(entries, 1, protowire.BytesType)
		entries = protowire.AppendBytes(entries, key)
		var err error
		if f.elem.kind != pvCustom && f.elem.kind != pvMessage && t.literal("null") {
			// A null value is the zero value.
			entries = t.zeroValue(entries, f.elem)
		} else {
			lv.fields = entries
			entries, err = t.value(entries, 2, f.elem, depth+1)
			lv = &t.levels[depth+1]
			if err != nil {
				return dst, err
			}
		}
		lv.spans = append(lv.spans, protoSpan{start: start, end: len(entries), key: string(key)})
		t.skipSpace()
		if t.consume(',') {
			continue
		}
		if t.consume('}') {
			break
		}
		return dst, errProtoFallback
	}
	lv.fields = entries
	spans := lv.spans
	slices.SortFunc(spans, func(a, b protoSpan) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(spans); i++ {
		if spans[i].key == spans[i-1].key {
			lv.spans = lv.spans[:0]
			return dst, errProtoFallback
		}
	}
	for _, s := range spans {
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		dst = protowire.AppendBytes(dst, entries[s.start:s.end])
	}
	lv.spans = lv.spans[:0]
	return dst, nil
}

// zeroValue appends field 2 of a map entry holding the zero value of a
// scalar type.
func (t *protoTranscoder) zeroValue(dst []byte, pt *protoType) []byte {
	switch pt.kind {
	case pvString:
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		return protowire.AppendVarint(dst, 0)
	case pvBool, pvInt, pvUint:
		dst = protowire.AppendTag(dst, 2, protowire.VarintType)
		return protowire.AppendVarint(dst, 0)
	case pvFloat64:
		dst = protowire.AppendTag(dst, 2, protowire.Fixed64Type)
		return protowire.AppendFixed64(dst, 0)
	}
	return dst // pvBytes: a nil slice is not written
}

// value reads one non-null JSON value of type pt and appends it as field
// num.
func (t *protoTranscoder) value(dst []byte, num protowire.Number, pt *protoType, depth int) ([]byte, error) {
	switch pt.kind {
	case pvString:
		s, ok := t.stringValue()
		if !ok {
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, s), nil
	case pvBytes:
		s, ok := t.plainString()
		if !ok {
			return dst, errProtoFallback
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, s)
		if err != nil {
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, b[:n]), nil
	case pvBool:
		var v uint64
		switch {
		case t.literal("true"):
			v = 1
		case t.literal("false"):
		default:
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, v), nil
	case pvInt:
		tok, ok := t.number()
		if !ok {
			return dst, errProtoFallback
		}
		v, err := strconv.ParseInt(string(tok), 10, pt.bits)
		if err != nil {
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, uint64(v)), nil
	case pvUint:
		tok, ok := t.number()
		if !ok {
			return dst, errProtoFallback
		}
		v, err := strconv.ParseUint(string(tok), 10, pt.bits)
		if err != nil {
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, v), nil
	case pvFloat64:
		tok, ok := t.number()
		if !ok {
			return dst, errProtoFallback
		}
		v, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return dst, errProtoFallback
		}
		dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(dst, math.Float64bits(v)), nil
	case pvMessage:
		next := t.level(depth + 1)
		body, err := t.message(next.out[:0], pt.msg, depth+1)
		t.levels[depth+1].out = body[:0]
		if err != nil {
			return dst, err
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, body), nil
	case pvCustom:
		if pt.typ == timeType || pt.typ == microTimeType {
			if b, ok := t.timeValue(dst, num, pt.typ == microTimeType); ok {
				return b, nil
			}
		}
		raw, ok := t.skipValue()
		if !ok {
			return dst, errProtoFallback
		}
		v := t.customValue(pt.typ)
		var err error
		if u, ok := v.Interface().(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(raw) // raw is valid JSON, as json.Unmarshal checks first
		} else {
			err = json.Unmarshal(raw, v.Interface())
		}
		if err != nil {
			return dst, errProtoFallback
		}
		m, ok := v.Interface().(protoMessage)
		if !ok {
			m, ok = v.Elem().Interface().(protoMessage)
		}
		if !ok {
			return dst, errProtoFallback
		}
		return appendMessage(dst, num, m)
	}
	return dst, errProtoFallback
}

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
)

// timeValue reads a Time or MicroTime given as a plain string, as its
// UnmarshalJSON does (time.Parse with its layout; the location does not
// reach the Protobuf), and appends it as field num. It reads nothing
// unless ok.
func (t *protoTranscoder) timeValue(dst []byte, num protowire.Number, micro bool) ([]byte, bool) {
	pos := t.pos
	s, ok := t.plainString()
	if !ok {
		t.pos = pos
		return dst, false
	}
	// The string does not outlive the call unless in an error, which is
	// dropped; the stored value it points into is not modified.
	str := unsafe.String(unsafe.SliceData(s), len(s))
	if micro {
		pt, err := time.Parse(metav1.RFC3339Micro, str)
		if err != nil {
			t.pos = pos
			return dst, false
		}
		m := metav1.MicroTime{Time: pt}
		n := m.Size()
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(n))
		dst = slices.Grow(dst, n)
		if _, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n]); err != nil {
			t.pos = pos
			return dst, false
		}
		return dst[:len(dst)+n], true
	}
	pt, err := time.Parse(time.RFC3339, str)
	if err != nil {
		t.pos = pos
		return dst, false
	}
	m := metav1.Time{Time: pt}
	n := m.Size()
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = slices.Grow(dst, n)
	if _, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n]); err != nil {
		t.pos = pos
		return dst, false
	}
	return dst[:len(dst)+n], true
}

// customValue returns a pointer to a zero value of typ, reused.
func (t *protoTranscoder) customValue(typ reflect.Type) reflect.Value {
	if t.custom == nil {
		t.custom = map[reflect.Type]reflect.Value{}
	}
	v, ok := t.custom[typ]
	if !ok {
		v = reflect.New(typ)
		t.custom[typ] = v
		return v
	}
	v.Elem().SetZero()
	return v
}

// appendMessage appends m as field num.
func appendMessage(dst []byte, num protowire.Number, m protoMessage) ([]byte, error) {
	n := m.Size()
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = slices.Grow(dst, n)
	if _, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n]); err != nil {
		return dst, errProtoFallback
	}
	return dst[:len(dst)+n], nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// The JSON reader. It accepts only what encoding/json accepts; where the
// decoded value could differ from what it reads plainly (escapes, invalid
// UTF-8) strings go through encoding/json.

func (t *protoTranscoder) skipSpace() {
	for t.pos < len(t.in) {
		switch t.in[t.pos] {
		case ' ', '\t', '\n', '\r':
			t.pos++
		default:
			return
		}
	}
}

func (t *protoTranscoder) consume(c byte) bool {
	if t.pos < len(t.in) && t.in[t.pos] == c {
		t.pos++
		return true
	}
	return false
}

func (t *protoTranscoder) peekLiteral(lit string) bool {
	return bytes.HasPrefix(t.in[t.pos:], []byte(lit))
}

// literal consumes lit (null, true, false) when it is next.
func (t *protoTranscoder) literal(lit string) bool {
	if !t.peekLiteral(lit) {
		return false
	}
	end := t.pos + len(lit)
	if end < len(t.in) && isLiteralByte(t.in[end]) {
		return false
	}
	t.pos = end
	return true
}

func isLiteralByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// rawString consumes a JSON string and returns its bytes between the
// quotes, and whether it is plain: no escapes, valid UTF-8.
func (t *protoTranscoder) rawString() (s []byte, plain, ok bool) {
	if !t.consume('"') {
		return nil, false, false
	}
	start := t.pos
	plain = true
	ascii := true
	in := t.in
	for t.pos < len(in) {
		// The bytes that need a look: quote, backslash, control, and
		// non-ASCII (for the UTF-8 check); the rest are skipped by a
		// table lookup each.
		i := t.pos
		// Eight bytes at a time while none of them needs a look.
		for i+8 <= len(in) && !hasStringSpecial(binary.LittleEndian.Uint64(in[i:])) {
			i += 8
		}
		for i < len(in) && !jsonStringSpecial[in[i]] {
			i++
		}
		t.pos = i
		if i >= len(in) {
			break
		}
		c := in[i]
		switch {
		case c == '"':
			s = in[start:t.pos]
			t.pos++
			if !ascii && !utf8.Valid(s) {
				plain = false
			}
			return s, plain, true
		case c == '\\':
			plain = false
			t.pos++
			if t.pos >= len(in) {
				return nil, false, false
			}
			switch in[t.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				t.pos++
			case 'u':
				if t.pos+5 > len(in) {
					return nil, false, false
				}
				for _, h := range in[t.pos+1 : t.pos+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				t.pos += 5
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			ascii = false
			t.pos++
		}
	}
	return nil, false, false
}

// hasStringSpecial reports whether any of the eight bytes in w is one
// jsonStringSpecial marks: a quote, a backslash, a control byte, or one
// at or above 0x80. Each test is the exact "has a zero byte" test
// ((v - 0x01..) &^ v & 0x80..) of v = w, or w with the sought byte
// xored out; for bytes below 0x20, w minus 0x20 in each byte.
func hasStringSpecial(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return (w|(q-ones)&^q|(b-ones)&^b|(w-ones*0x20)&^w)&highs != 0
}

// jsonStringSpecial marks the bytes rawString stops at.
var jsonStringSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf
	}
	return t
}()

// plainString reads a string with no escapes and valid UTF-8: keys, map
// keys and base64; others are left to encoding/json.
func (t *protoTranscoder) plainString() ([]byte, bool) {
	s, plain, ok := t.rawString()
	return s, ok && plain
}

// stringValue reads a string value, decoded as encoding/json decodes it.
func (t *protoTranscoder) stringValue() ([]byte, bool) {
	start := t.pos
	s, plain, ok := t.rawString()
	if !ok {
		return nil, false
	}
	if plain {
		return s, true
	}
	var str string
	if err := json.Unmarshal(t.in[start:t.pos], &str); err != nil {
		return nil, false
	}
	return []byte(str), true
}

// number reads a JSON number token.
func (t *protoTranscoder) number() ([]byte, bool) {
	start := t.pos
	b := t.in
	i := t.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(b) && isLiteralByte(b[i]) {
		return nil, false
	}
	t.pos = i
	return b[start:i], true
}

// skipValue reads any JSON value, checking it, and returns its bytes.
func (t *protoTranscoder) skipValue() ([]byte, bool) {
	start := t.pos
	if !t.skip(0) {
		return nil, false
	}
	return t.in[start:t.pos], true
}

func (t *protoTranscoder) skip(depth int) bool {
	// encoding/json refuses documents nested past 10,000 levels; this
	// gives up far before, whatever the depth it starts at.
	if depth > 1000 {
		return false
	}
	if t.pos >= len(t.in) {
		return false
	}
	switch c := t.in[t.pos]; {
	case c == '"':
		_, _, ok := t.rawString()
		return ok
	case c == '{':
		t.pos++
		t.skipSpace()
		if t.consume('}') {
			return true
		}
		for {
			t.skipSpace()
			if _, _, ok := t.rawString(); !ok {
				return false
			}
			t.skipSpace()
			if !t.consume(':') {
				return false
			}
			t.skipSpace()
			if !t.skip(depth + 1) {
				return false
			}
			t.skipSpace()
			if t.consume(',') {
				continue
			}
			return t.consume('}')
		}
	case c == '[':
		t.pos++
		t.skipSpace()
		if t.consume(']') {
			return true
		}
		for {
			t.skipSpace()
			if !t.skip(depth + 1) {
				return false
			}
			t.skipSpace()
			if t.consume(',') {
				continue
			}
			return t.consume(']')
		}
	case c == 't':
		return t.literal("true")
	case c == 'f':
		return t.literal("false")
	case c == 'n':
		return t.literal("null")
	default:
		_, ok := t.number()
		return ok
	}
}
