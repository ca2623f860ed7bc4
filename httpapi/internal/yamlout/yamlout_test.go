package yamlout

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkSame fails t unless Append and reference agree on src: both fail,
// or both write the same bytes. When go-yaml's own key order is ambiguous
// for src (see ambiguousOrder), the same lines in any order will do (a
// mapping's first member shares the line of its "- " or ": ").
// It reports whether the bytes were the same.
func checkSame(t *testing.T, src []byte) bool {
	t.Helper()
	got, err := Append(nil, src)
	want, wantErr := reference(src)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("JSON %q: got error %v, want error %v", src, err, wantErr)
	}
	if err != nil || bytes.Equal(got, want) {
		return true
	}
	if ambiguousOrder(src) {
		// go-yaml's order for such keys follows Go's random map order, so
		// its output differs from run to run: accept ours when it has the
		// lines of one of go-yaml's outputs.
		for range 50 {
			if slices.Equal(sortedLines(got), sortedLines(want)) || bytes.Equal(got, want) {
				return false
			}
			want, _ = reference(src)
		}
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, bytes.LastIndexByte(want[:i], '\n')-300)
	if ambiguousOrder(src) {
		gl, wl := sortedLines(got), sortedLines(want)
		for k := range min(len(gl), len(wl)) {
			if gl[k] != wl[k] {
				t.Errorf("ambiguous order; lines differ: got %.200q want %.200q", gl[k], wl[k])
				break
			}
		}
	}
	t.Fatalf("JSON %.2000q:\nfirst difference at byte %d, after %q:\ngot  %.300q\nwant %.300q", src, i, want[from:i], got[i:], want[i:])
	return false
}

func sortedLines(b []byte) []string {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		l = strings.TrimLeft(l, " ")
		for strings.HasPrefix(l, "- ") || strings.HasPrefix(l, ": ") {
			l = strings.TrimLeft(l[2:], " ")
		}
		lines[i] = l
	}
	slices.Sort(lines)
	return lines
}

// trickyStrings are texts that go-yaml quotes, folds or orders in
// particular ways; they are used as keys and as values.
var trickyStrings = []string{
	"", " ", "a", "A", "z", "_", "-", "--", "---", "--- x", "...", ". ", "- x", "-x", "? x", "?x", ": x", ":x", "x:", "x: y", "x:y", "x :y",
	"#", "#x", "x #y", "x#y", "x\t#y", "&a", "*a", "!a", "|", ">", "'", "\"", "%", "@", "`", ",", "[", "]", "{", "}", "x,y", "x[0]",
	"true", "True", "TRUE", "tRue", "false", "yes", "Yes", "no", "NO", "on", "off", "y", "n", "Y", "N", "null", "Null", "NULL", "~", "nil",
	"0", "1", "-1", "+1", "01", "007", "08", "0x1F", "0X1f", "0o17", "0b101", "0b-1", "-0b101", "-0b", "0b", "1_000", "1__0", "_1", "1_",
	"+.5", ".5", "-.5", "5.", "1e3", "1E+3", "1e", "e3", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "inf", "NaN", "1.5.3", "1-2", "+-1",
	"1:20", "-1:20", "1:20:30.5", "1:60", "190:20:30", "1_0:2", "1:2_", "12:345",
	"2024-01-01", "2024-01-01T00:00:00Z", "2024-1-2 3:4:5", "2024-01-01t10:00:00+02:00", "2024-13-45", "20240-01-01", "2024-01-01x",
	"123456789012345678901234567890", "-9223372036854775809", "18446744073709551615", "18446744073709551616", "0x10000000000000000",
	"a1", "a2", "a10", "a19", "a1a", "a01", "a001", "a0", "a00", "a1b2", "k8s.io/x", "v1beta1", "x509", "a٣", "٣", "a٣b", "a1-", "a1.",
	"é", "ü", "日本", "😀", "a😀b", "\u00a0", "a\u00a0b", "\u0085", "a\u0085b", "\u2028", "a\u2028b", "a\u2029b", "\ufeff", "\ufeffab c", "\ufffd", "\ufffe",
	"a\tb", "\t", "a\x7fb", "\x00", "a\x01b", "\x1b[0m", "a\rb", "a\r\nb",
	"multi\nline", "multi\nline\n", "multi\nline\n\n", "\n", "\n\n", "\nx", " x\ny", "x \ny", "x\n y", "x\n\ny", "x\n", "x\n ", "x\t\ny", "x\ny\t",
	"a\u2028\nb", "x\u2029", "'quoted'", "it's", "\"dq\"", "back\\slash", "a  b", "a   b", " a", "a ", "  ", " \n",
	strings.Repeat("word ", 20), strings.Repeat("word ", 40), strings.Repeat("x", 200), strings.Repeat("x", 129), strings.Repeat("x", 128),
	strings.Repeat("ab ", 30) + "  " + strings.Repeat("cd ", 30), strings.Repeat("é ", 60), strings.Repeat("a ", 60) + "\n",
	strings.Repeat("w ", 41) + "x", strings.Repeat("long line ", 12) + "\n" + strings.Repeat("more ", 30),
	strings.Repeat("f:x", 400), strings.Repeat("key ", 300),
}

func TestAppend_Table(t *testing.T) {
	var docs []string
	for _, s := range trickyStrings {
		q := jsonQuote(s)
		docs = append(docs, q, "{"+q+":"+q+"}", "["+q+"]", `{"k":[`+q+`,{`+q+`:[`+q+`]}]}`, `{"a":{"b":{"c":[[`+q+`]]}}}`, `{`+q+`:{"x":`+q+`}}`, `{`+q+`:[1,`+q+`]}`)
	}
	docs = append(docs,
		// Numbers.
		`0`, `-0`, `-0.0`, `1.0`, `1e21`, `1e20`, `1E-7`, `0.000001`, `123456789.5`, `1e400`, `-1e400`, `1e-400`, `9223372036854775807`,
		`9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `18446744073709551615`, `18446744073709551616`,
		`12345678901234567890123`, `0.1`, `2.5e-5`, `[1e308,1.7976931348623157e308,5e-324,4.9e-324]`,
		// Literals and structure.
		`true`, `false`, `null`, `{}`, `[]`, `[{}]`, `[[]]`, `[[[]]]`, `{"a":{}}`, `{"a":[]}`, `[[1,2],[3,[4,[5]]]]`, `[{"a":1,"b":2},{"c":[{"d":[]}]}]`,
		`{"a":[{"b":[{"c":[1]}]}]}`, ` { "a" : [ 1 , 2 ] , "b" : { } } `, "\n\t{\"a\":\r\n1}",
		// Duplicate keys: the last wins.
		`{"a":1,"a":2}`, `{"a":{"x":1},"b":0,"a":[2]}`, `{"a":1,"\u0061":2}`, `{"k8s":1,"a1a":2,"k8s":3}`, `{"a1a":1,"a2":2,"a19":3,"a1a":4}`,
		`{"\xff":1,"\ufffd":2}`,
		// Escapes and invalid UTF-8.
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\ud83d\ude00"`, `"a\/b"`, `"\u0000"`, `"\b\f\n\r\t"`,
		"\"\xff\"", "\"a\xc3\"", "\"\xe2\x80\"", "{\"\xff\xfe\":\"\xc0\xaf\"}", `"\u2028"`, `"\u00e9"`, `"\uFEFF"`,
		// Trailing data and errors.
		``, ` `, `x`, `{`, `[1,]`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `"abc`, `"\x"`, `"\u12"`, "\"a\x01\"", `tru`, `nul`, `-`, `1.`, `1e`, `1e+`, `.5`, `+1`,
		`01`, `[01]`, `123x`, `1+2`, `1.5.3`, `1e5e3`, `{}x`, `[]]`, `"a"b`, `true1`, `{"a":1}{`, `[1 2]`, `{"a":1 "b":2}`, "\xef\xbb\xbf{}",
		strings.Repeat("[", 10000)+strings.Repeat("]", 10000), strings.Repeat("[", 10001)+strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10001)+"1"+strings.Repeat("}", 10001),
		// Deep nesting past the fold width.
		strings.Repeat(`{"key":`, 45)+jsonQuote(strings.Repeat("word ", 30)+"a\nb")+strings.Repeat("}", 45),
		strings.Repeat(`[`, 45)+jsonQuote(strings.Repeat("word ", 30)+"a\tb")+strings.Repeat("]", 45),
		strings.Repeat(`{"k":[`, 30)+jsonQuote(strings.Repeat("w ", 60)+"\u2028"+strings.Repeat("v ", 60))+strings.Repeat("]}", 30),
		// Key orders.
		`{"b":1,"a":2,"B":3,"A":4,"_":5,"1":6,"10":7,"2":8,"-":9,"é":10,"日":11,"a1":12,"a10":13,"a2":14,"a01":15,"a-":16,"a.":17}`,
		`{"x09":1,"x9":2,"x010":3,"x10":4,"x0":5,"x00":6,"x":7,"x-":8,"x:":9,"x٣":10,"x٤":11}`,
		`{"a10b":1,"a10":2,"a1":3,"a100":4,"a1-":5,"a1.x":6,"a1 x":7}`,
	)
	same := 0
	for _, d := range docs {
		if checkSame(t, []byte(d)) {
			same++
		}
	}
	t.Logf("%d documents: %d with the same bytes, %d with the same lines in go-yaml's ambiguous key order", len(docs), same, len(docs)-same)
}

// jsonQuote writes s as a JSON string with its bytes as they are (invalid
// UTF-8 included), escaping only what JSON requires.
func jsonQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// generator writes random JSON documents made of tricky pieces.
type generator struct {
	r *rand.Rand
	b strings.Builder
}

var keyPieces = []string{"a", "b", "Z", "k", "x", "1", "2", "9", "10", "0", "00", "-", "_", ".", "/", ":", " ", "#", "?", "é", "日", "٣", "😀", "\t", "\n", "'", "\""}

func (g *generator) text(key bool) string {
	r := g.r
	switch r.IntN(10) {
	case 0, 1:
		return trickyStrings[r.IntN(len(trickyStrings))]
	case 2:
		// Near the fold: words and spaces around column 80.
		var s strings.Builder
		for s.Len() < 60+r.IntN(60) {
			s.WriteString(strings.Repeat("w", 1+r.IntN(9)))
			s.WriteString(strings.Repeat(" ", 1+r.IntN(2)*r.IntN(3)))
		}
		if r.IntN(3) == 0 {
			s.WriteString("\n" + strings.Repeat("tail ", r.IntN(30)))
		}
		return s.String()
	case 3:
		if key {
			return strings.Repeat(keyPieces[r.IntN(len(keyPieces))], 100+r.IntN(1100))
		}
		var s strings.Builder
		for range 1 + r.IntN(6) {
			s.WriteString(strings.Repeat("line ", r.IntN(4)))
			s.WriteString([]string{"\n", "\n\n", " \n", "\t\n", "\r\n", "\u2028", "  "}[r.IntN(7)])
		}
		return s.String()
	}
	var s strings.Builder
	for range r.IntN(5) + r.IntN(2) {
		s.WriteString(keyPieces[r.IntN(len(keyPieces))])
	}
	return s.String()
}

// quote writes s as JSON, at random escaping characters that need no
// escape, or putting in invalid UTF-8 and lone surrogates.
func (g *generator) quote(s string) {
	r := g.r
	g.b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			fmt.Fprintf(&g.b, `\u%04x`, c)
		case r.IntN(40) == 0:
			if c > 0xFFFF {
				c -= 0x10000
				fmt.Fprintf(&g.b, `\u%04x\u%04x`, 0xD800+(c>>10), 0xDC00+(c&0x3FF))
			} else {
				fmt.Fprintf(&g.b, `\u%04X`, c)
			}
		default:
			g.b.WriteRune(c)
		}
		switch r.IntN(300) {
		case 0:
			g.b.WriteString(`\ud800`)
		case 1:
			g.b.WriteByte(0xff)
		case 2:
			g.b.WriteString(`\/`)
		}
	}
	g.b.WriteByte('"')
}

func (g *generator) number() {
	r := g.r
	switch r.IntN(6) {
	case 0:
		g.b.WriteString(strconv.FormatInt(r.Int64()>>r.IntN(64)*int64(1-2*r.IntN(2)), 10))
	case 1:
		g.b.WriteString(strconv.FormatUint(r.Uint64(), 10))
	case 2:
		g.b.WriteString(strconv.FormatFloat(r.NormFloat64()*float64(r.IntN(1e6)), 'g', -1, 64))
	case 3:
		fmt.Fprintf(&g.b, "%de%d", r.IntN(100)-50, r.IntN(800)-400)
	case 4:
		fmt.Fprintf(&g.b, "%d.%de%+d", r.IntN(10), r.IntN(1000), r.IntN(40)-20)
	default:
		g.b.WriteString([]string{"0", "-0", "1", "-1", "0.5", "-0.0", "1E400", "123456789012345678901234567890", "1.0", "100", "1e2"}[r.IntN(11)])
	}
}

func (g *generator) value(depth int) {
	r := g.r
	n := r.IntN(10)
	if depth > 5 {
		n = 9
	}
	switch n {
	case 0, 1, 2:
		g.b.WriteByte('{')
		keys := r.IntN(7)
		for i := range keys {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.space()
			g.quote(g.text(true))
			g.space()
			g.b.WriteByte(':')
			g.value(depth + 1)
		}
		g.space()
		g.b.WriteByte('}')
	case 3, 4:
		g.b.WriteByte('[')
		items := r.IntN(5)
		for i := range items {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.value(depth + 1)
		}
		g.space()
		g.b.WriteByte(']')
	case 5:
		g.space()
		g.number()
		g.space()
	case 6:
		g.b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	default:
		g.space()
		g.quote(g.text(false))
		g.space()
	}
}

func (g *generator) space() {
	if g.r.IntN(8) == 0 {
		g.b.WriteString([]string{" ", "\n", "\t", "\r\n "}[g.r.IntN(4)])
	}
}

func (g *generator) document() []byte {
	g.b.Reset()
	g.value(0)
	return []byte(g.b.String())
}

func TestAppend_Random(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := generator{r: rand.New(rand.NewPCG(1, 2))}
	same := 0
	for range n {
		if checkSame(t, g.document()) {
			same++
		}
	}
	t.Logf("%d documents: %d with the same bytes, %d with the same lines in go-yaml's ambiguous key order", n, same, n-same)
}

// FuzzYAMLOut checks that Append writes what go-yaml writes, for any
// input.
func FuzzYAMLOut(f *testing.F) {
	for _, s := range trickyStrings[:40] {
		f.Add([]byte("{" + jsonQuote(s) + ":" + jsonQuote(s) + "}"))
	}
	g := generator{r: rand.New(rand.NewPCG(3, 4))}
	for range 40 {
		f.Add(g.document())
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_ = checkSame(t, src)
	})
}

// TestCompareKeys compares compareKeys with go-yaml's own comparison on
// pairs of keys built from digits, letters and other characters.
func TestCompareKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := append(slices.Clone(keyPieces), "0", "00", "01", "1", "19", "٠", "٩", "𝟘", "Ⅻ", "x", "10000000000000000000", "99999999999999999999")
	key := func() string {
		var b strings.Builder
		for range 1 + r.IntN(5) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 20000 {
		a, b := key(), key()
		if r.IntN(4) == 0 {
			b = a + key() // shares a prefix
		}
		if a == b {
			continue
		}
		got := compareKeys([]byte(a), []byte(b))
		want := 1
		if yamlLess(a, b) {
			want = -1
		}
		if got != want {
			t.Fatalf("compareKeys(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}
