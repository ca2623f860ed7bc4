package httpapi

import (
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// kube-apiserver's warning recorder (endpoints/filters/warning.go) bounds
// the Warning headers of one answer: once their text passes
// warningTruncateAtRunes, every warning is cut to warningItemRunes and
// those past the total are dropped. Without it, a body with 100,000
// unknown fields answered 100,000 Warning headers.
const (
	warningTruncateAtRunes = 4 * 1024
	warningItemRunes       = 256
)

// warningHeaders returns the Warning header values (code 299, agent "-")
// for warnings, as kube-apiserver's recorder writes them when they are
// added in order: duplicates dropped, and truncated past the total.
func warningHeaders(warnings []string) []string {
	var (
		headers    []string
		seen       map[string]bool
		ordered    []string
		written    int
		truncating bool
	)
	for _, text := range warnings {
		if text == "" {
			continue
		}
		if truncating && written >= warningTruncateAtRunes {
			break
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		if seen[text] {
			continue
		}
		seen[text] = true
		ordered = append(ordered, text)
		text, runes := truncateRunes(text, truncating)
		h, err := utilnet.NewWarningHeader(299, "-", text)
		if err != nil {
			continue
		}
		if written+runes <= warningTruncateAtRunes || truncating {
			written += runes
			headers = append(headers, h)
			continue
		}
		// Over the total for the first time: start again with every
		// warning so far cut short.
		truncating, written, headers = true, 0, headers[:0]
		for _, text := range ordered {
			text, runes := truncateRunes(text, true)
			if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
				written += runes
				headers = append(headers, h)
			}
		}
	}
	return headers
}

// truncateRunes cuts text to warningItemRunes runes when cut is set, and
// returns it with its length in runes.
func truncateRunes(text string, cut bool) (string, int) {
	n := utf8.RuneCountInString(text)
	if cut && n > warningItemRunes {
		return string([]rune(text)[:warningItemRunes]), warningItemRunes
	}
	return text, n
}
