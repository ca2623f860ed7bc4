package httpapi

import (
	"fmt"
	"strings"
	"testing"
)

func TestWarningHeaders(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name      string
		warnings  []string
		wantCount int
		wantFirst string
	}{
		{"none", nil, 0, ""},
		{"duplicates dropped", []string{"a", "b", "a"}, 2, `299 - "a"`},
		{"under the total, not cut", []string{long}, 1, `299 - "` + long + `"`},
		// 13 x 300 runes fit in 4,096; the 14th starts truncation, which
		// replays all 14 at 256 runes (3,584), then adds 256-rune items
		// while under 4,096: two more.
		{"over the total, cut and capped", repeatDistinct(long, 20), 16, `299 - "` + "0" + long[:255] + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := warningHeaders(tt.warnings)
			if len(got) != tt.wantCount {
				t.Fatalf("got %d headers, want %d", len(got), tt.wantCount)
			}
			if len(got) > 0 && got[0] != tt.wantFirst {
				t.Errorf("got first %q, want %q", got[0], tt.wantFirst)
			}
		})
	}
}

// TestWarningHeaders_Bounded checks that 100,000 distinct warnings make
// at most about 4 KiB of warning text.
func TestWarningHeaders_Bounded(t *testing.T) {
	many := make([]string, 100000)
	for i := range many {
		many[i] = fmt.Sprintf("unknown field %q", fmt.Sprint("f", i))
	}
	got := warningHeaders(many)
	size := 0
	for _, h := range got {
		size += len(h) - len(`299 - ""`)
	}
	if size > warningTruncateAtRunes+warningItemRunes+len(got)*2 || len(got) == 0 {
		t.Errorf("got %d headers with %d bytes of text, want at most about %d", len(got), size, warningTruncateAtRunes)
	}
}

// repeatDistinct returns n distinct warnings of len(s)+1 runes or more.
func repeatDistinct(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i) + s
	}
	return out
}
