package yamlout

import "unicode/utf8"

// The layout rules below are go-yaml v2's emitter's (emitterc.go) for the
// events its encoder makes of JSON data, with best_indent 2, best_width
// 80 and unicode output: the same state (column, indent, whether the last
// thing written was whitespace or indentation) changes at the same
// points, so that lines fold at the same spaces.

const (
	indentStep = 2
	bestWidth  = 80
)

// style is how a scalar is written.
type style uint8

const (
	plainStyle style = iota
	singleQuotedStyle
	doubleQuotedStyle
	literalStyle
)

// emitter writes YAML text and keeps the layout state.
type emitter struct {
	out    []byte
	column int // in runes
	indent int // -1 outside any node
	// whitespace: the last thing written ends in whitespace (or nothing
	// was written on the line); indention: only indentation and
	// indicators that count as such are on the line so far.
	whitespace bool
	indention  bool
}

// grow makes room for n more bytes of output, doubling the buffer (append
// alone grows large buffers by a quarter, copying them more often).
func (e *emitter) grow(n int) {
	if cap(e.out)-len(e.out) >= n {
		return
	}
	out := make([]byte, len(e.out), max(2*cap(e.out), len(e.out)+n))
	copy(out, e.out)
	e.out = out
}

func (e *emitter) put(c byte) {
	e.out = append(e.out, c)
	e.column++
}

func (e *emitter) newline() {
	e.out = append(e.out, '\n')
	e.column = 0
}

// writeRune copies the character at s[i:] and returns its width in bytes.
func (e *emitter) writeRune(s []byte, i int) int {
	w := runeWidth(s[i])
	e.out = append(e.out, s[i:i+w]...)
	e.column++
	return w
}

// writeBreak copies the line break at s[i:] (a '\n' is written as the
// output's line break) and returns its width.
func (e *emitter) writeBreak(s []byte, i int) int {
	if s[i] == '\n' {
		e.newline()
		return 1
	}
	w := e.writeRune(s, i)
	e.column = 0
	return w
}

// writeIndent starts a new line at the current indent, unless the line so
// far is only indentation that reaches no further than it.
func (e *emitter) writeIndent() {
	indent := max(e.indent, 0)
	e.grow(indent + 8) // and the indicators that follow
	if !e.indention || e.column > indent || e.column == indent && !e.whitespace {
		e.newline()
	}
	for e.column < indent {
		e.put(' ')
	}
	e.whitespace = true
	e.indention = true
}

// writeIndicator writes a YAML indicator ("-", "?", ":", quotes, "|" and
// its hints, brackets), with a space before it if needSpace and the line
// does not already end in whitespace.
func (e *emitter) writeIndicator(s string, needSpace, isWhitespace, isIndention bool) {
	if needSpace && !e.whitespace {
		e.put(' ')
	}
	e.out = append(e.out, s...)
	e.column += utf8.RuneCountInString(s)
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
}

// pushIndent returns the indent to restore and moves it one step in:
// outside any node to 0 for a collection (2 for a scalar).
func (e *emitter) pushIndent(scalar, indentless bool) int {
	saved := e.indent
	switch {
	case e.indent < 0 && scalar:
		e.indent = indentStep
	case e.indent < 0:
		e.indent = 0
	case !indentless:
		e.indent += indentStep
	}
	return saved
}

// runeWidth returns the length of the UTF-8 sequence that starts with c.
func runeWidth(c byte) int {
	switch {
	case c < 0x80:
		return 1
	case c&0xE0 == 0xC0:
		return 2
	case c&0xF0 == 0xE0:
		return 3
	}
	return 4
}

// isBreakAt reports whether a line break (CR, LF, NEL, LS or PS) starts at
// s[i].
func isBreakAt(s []byte, i int) bool {
	switch s[i] {
	case '\r', '\n':
		return true
	case 0xC2:
		return s[i+1] == 0x85
	case 0xE2:
		return s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9)
	}
	return false
}

// isPrintableAt reports whether the character at s[i] may appear
// unescaped in a YAML scalar, by go-yaml's test: LF, printable ASCII, and
// most of the Basic Multilingual Plane from U+00A0, without the BOM and
// U+FFFE/U+FFFF. Characters beyond the BMP (emoji) are not.
func isPrintableAt(s []byte, i int) bool {
	switch c := s[i]; {
	case c == 0x0A, 0x20 <= c && c <= 0x7E:
		return true
	case c == 0xC2:
		return s[i+1] >= 0xA0
	case 0xC2 < c && c < 0xED, c == 0xEE:
		return true
	case c == 0xED:
		return s[i+1] < 0xA0
	case c == 0xEF:
		return !(s[i+1] == 0xBB && s[i+2] == 0xBF) && !(s[i+1] == 0xBF && (s[i+2] == 0xBE || s[i+2] == 0xBF))
	}
	return false
}

// isBlankAt reports whether s[i] is a space or a tab.
func isBlankAt(s []byte, i int) bool {
	return s[i] == ' ' || s[i] == '\t'
}

// analysis is what a scalar's text allows.
type analysis struct {
	multiline bool
	plainOK   bool // plain, in block context
	singleOK  bool
	blockOK   bool // literal
}

// analyze reads value the way go-yaml decides which styles can hold it.
func analyze(value []byte) analysis {
	if len(value) == 0 {
		return analysis{plainOK: true, singleOK: true}
	}
	var (
		blockIndicators, lineBreaks, special       bool
		leadingSpace, leadingBreak                 bool
		trailingSpace, trailingBreak               bool
		breakSpace, spaceBreak                     bool
		prevSpace, prevBreak                       bool
		precededByWhitespace, followedByWhitespace bool
	)
	if len(value) >= 3 && (value[0] == '-' && value[1] == '-' && value[2] == '-' || value[0] == '.' && value[1] == '.' && value[2] == '.') {
		blockIndicators = true
	}
	precededByWhitespace = true
	for i := 0; i < len(value); {
		w := runeWidth(value[i])
		last := i+w >= len(value)
		followedByWhitespace = last || isBlankAt(value, i+w)
		c := value[i]
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				blockIndicators = true
			case '?', ':', '-':
				if followedByWhitespace {
					blockIndicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					blockIndicators = true
				}
			}
		}
		if !isPrintableAt(value, i) {
			special = true
		}
		switch {
		case c == ' ':
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || last
			breakSpace = breakSpace || prevBreak
			prevSpace, prevBreak = true, false
		case isBreakAt(value, i):
			lineBreaks = true
			leadingBreak = leadingBreak || i == 0
			trailingBreak = trailingBreak || last
			spaceBreak = spaceBreak || prevSpace
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		precededByWhitespace = c == ' ' || c == '\t' || c == 0 || isBreakAt(value, i)
		i += w
	}
	a := analysis{multiline: lineBreaks, plainOK: true, singleOK: true, blockOK: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || blockIndicators {
		a.plainOK = false
	}
	if trailingSpace {
		a.blockOK = false
	}
	if breakSpace {
		a.plainOK, a.singleOK = false, false
	}
	if spaceBreak || special {
		a.plainOK, a.singleOK, a.blockOK = false, false, false
	}
	return a
}

// scalar writes value, which go-yaml's encoder asked for in style want,
// as a key (simple or not) or any other node.
func (e *emitter) scalar(value []byte, want style, a analysis, simpleKey bool) {
	s := want
	if simpleKey && a.multiline {
		s = doubleQuotedStyle
	}
	if s == plainStyle && (!a.plainOK || len(value) == 0 && simpleKey) {
		s = singleQuotedStyle
	}
	if s == singleQuotedStyle && !a.singleOK {
		s = doubleQuotedStyle
	}
	if s == literalStyle && (!a.blockOK || simpleKey) {
		s = doubleQuotedStyle
	}
	e.grow(4*len(value) + 32) // an escape is at most 4 times its UTF-8
	saved := e.pushIndent(true, false)
	switch s {
	case plainStyle:
		e.plain(value, !simpleKey)
	case singleQuotedStyle:
		e.singleQuoted(value, !simpleKey)
	case doubleQuotedStyle:
		e.doubleQuoted(value, !simpleKey)
	default:
		e.literal(value)
	}
	e.indent = saved
}

// plain writes value unquoted; with allowBreaks, a space past column 80
// (not followed by another space) becomes a line break.
func (e *emitter) plain(value []byte, allowBreaks bool) {
	if !e.whitespace {
		e.put(' ')
	}
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i+1 < len(value) && value[i+1] != ' ' {
				e.writeIndent()
				i++
			} else {
				i += e.writeRune(value, i)
			}
			spaces = true
		case isBreakAt(value, i):
			if !breaks && value[i] == '\n' {
				e.newline()
			}
			i += e.writeBreak(value, i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			i += e.writeRune(value, i)
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.whitespace = false
	e.indention = false
}

// singleQuoted writes value in single quotes (a quote doubled), folding
// like plain except at the first and last character.
func (e *emitter) singleQuoted(value []byte, allowBreaks bool) {
	e.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 && value[i+1] != ' ' {
				e.writeIndent()
				i++
			} else {
				i += e.writeRune(value, i)
			}
			spaces = true
		case isBreakAt(value, i):
			if !breaks && value[i] == '\n' {
				e.newline()
			}
			i += e.writeBreak(value, i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if value[i] == '\'' {
				e.put('\'')
			}
			i += e.writeRune(value, i)
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.writeIndicator("'", false, false, false)
	e.whitespace = false
	e.indention = false
}

const hexDigits = "0123456789ABCDEF"

// doubleQuoted writes value in double quotes with escapes; a space past
// column 80 becomes a line break (with a backslash when a space follows).
// A value that starts with a byte order mark is escaped throughout.
func (e *emitter) doubleQuoted(value []byte, allowBreaks bool) {
	e.writeIndicator(`"`, true, false, false)
	bom := len(value) >= 3 && value[0] == 0xEF && value[1] == 0xBB && value[2] == 0xBF
	spaces := false
	for i := 0; i < len(value); {
		c := value[i]
		switch {
		case bom || c == '"' || c == '\\' || !isPrintableAt(value, i) || isBreakAt(value, i):
			r, w := rune(c), 1
			if c >= utf8.RuneSelf {
				r, w = utf8.DecodeRune(value[i:])
			}
			i += w
			e.put('\\')
			e.escape(r)
			spaces = false
		case c == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 {
				e.writeIndent()
				if value[i+1] == ' ' {
					e.put('\\')
				}
				i++
			} else {
				i += e.writeRune(value, i)
			}
			spaces = true
		default:
			i += e.writeRune(value, i)
			spaces = false
		}
	}
	e.writeIndicator(`"`, false, false, false)
	e.whitespace = false
	e.indention = false
}

// escape writes the escape of r after its backslash.
func (e *emitter) escape(r rune) {
	var short byte
	switch r {
	case 0:
		short = '0'
	case 0x07:
		short = 'a'
	case 0x08:
		short = 'b'
	case 0x09:
		short = 't'
	case 0x0A:
		short = 'n'
	case 0x0B:
		short = 'v'
	case 0x0C:
		short = 'f'
	case 0x0D:
		short = 'r'
	case 0x1B:
		short = 'e'
	case '"':
		short = '"'
	case '\\':
		short = '\\'
	case 0x85:
		short = 'N'
	case 0xA0:
		short = '_'
	case 0x2028:
		short = 'L'
	case 0x2029:
		short = 'P'
	}
	if short != 0 {
		e.put(short)
		return
	}
	digits := 8
	switch {
	case r <= 0xFF:
		e.put('x')
		digits = 2
	case r <= 0xFFFF:
		e.put('u')
		digits = 4
	default:
		e.put('U')
	}
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		e.put(hexDigits[(r>>shift)&0xF])
	}
}

// literal writes value as a literal block scalar ("|"), with an
// indentation hint when it starts with a space or a break, and "-" (no
// final line break) or "+" (more than one, or only one) chomping.
func (e *emitter) literal(value []byte) {
	e.writeIndicator("|", true, false, false)
	if value[0] == ' ' || isBreakAt(value, 0) {
		e.writeIndicator(string(rune('0'+indentStep)), false, false, false)
	}
	last := lastRuneStart(value, len(value))
	switch {
	case !isBreakAt(value, last):
		e.writeIndicator("-", false, false, false)
	case last == 0 || isBreakAt(value, lastRuneStart(value, last)):
		e.writeIndicator("+", false, false, false)
	}
	e.newline()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(value); {
		if isBreakAt(value, i) {
			i += e.writeBreak(value, i)
			e.indention = true
			breaks = true
			continue
		}
		if breaks {
			e.writeIndent()
		}
		i += e.writeRune(value, i)
		e.indention = false
		breaks = false
	}
}

// lastRuneStart returns where the character that ends s[:end] starts.
func lastRuneStart(s []byte, end int) int {
	i := end - 1
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return i
}
