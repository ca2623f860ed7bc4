package httpapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// json-patch v4 copies an array for every element an operation adds to it
// or removes from it, so a patch costs the sum, over its add, remove, move
// and copy operations on array elements, of the array's length: 10,000
// inserts at the front of a 100,000-entry list took 5.8 s. kube-apiserver
// has the same cost and bounds only the operations (10,000).
const (
	// maxJSONPatchArrayMoves bounds that sum; at 50 million element
	// copies a patch takes about 0.3 s.
	maxJSONPatchArrayMoves = 50_000_000
	// jsonPatchCostCheckOps is the operation count up to which the cost
	// is not computed: 64 operations cannot pass the bound by much with
	// the arrays a 3 MiB body can hold, and the check decodes the object.
	jsonPatchCostCheckOps = 64
)

// checkJSONPatchCost refuses, with a 413 in the words of the operation
// cap, a patch whose array operations would copy more than
// maxJSONPatchArrayMoves elements of cur (the object, as JSON). An array
// operation whose array is not in cur (one the patch makes) is charged
// the largest array the patch's own bytes could hold.
func checkJSONPatchCost(ops jsonpatch.Patch, cur, patch []byte) error {
	if len(ops) <= jsonPatchCostCheckOps {
		return nil
	}
	var doc interface{}
	if err := json.Unmarshal(cur, &doc); err != nil {
		return nil // Apply reports it.
	}
	var moves int64
	for _, op := range ops {
		var pointers []string
		switch op.Kind() {
		case "add", "remove", "copy":
			p, _ := op.Path()
			pointers = []string{p}
		case "move":
			p, _ := op.Path()
			f, _ := op.From()
			pointers = []string{p, f}
		}
		for _, p := range pointers {
			moves += arrayLenAt(doc, p, int64(len(patch)/2))
		}
	}
	if moves > maxJSONPatchArrayMoves {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum array elements a JSON patch may shift is %d, got %d in %d operations", maxJSONPatchArrayMoves, moves, len(ops)))
	}
	return nil
}

// arrayLenAt returns the length of the array that holds the element the
// JSON pointer p names by index in doc, 0 if p does not name an array
// element by index, and unknown if the array is not in doc.
func arrayLenAt(doc interface{}, p string, unknown int64) int64 {
	if p == "" || p[0] != '/' {
		return 0
	}
	tokens := strings.Split(p[1:], "/")
	last := tokens[len(tokens)-1]
	// ParseInt, not Atoi: an index past a 32-bit int is an index on
	// armv7 too, so the cost is the same on every architecture.
	if _, err := strconv.ParseInt(last, 10, 64); err != nil {
		return 0 // a key, or "-": appending copies nothing
	}
	cur := doc
	for _, tok := range tokens[:len(tokens)-1] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]interface{}:
			cur = c[tok]
		case []interface{}:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return unknown
			}
			cur = c[i]
		default:
			return unknown
		}
	}
	switch c := cur.(type) {
	case []interface{}:
		return int64(len(c))
	case map[string]interface{}:
		return 0 // a key that looks like an index
	}
	return unknown
}

// maxMergePatchCopyBytes bounds the bytes json-patch v4's MergePatch
// copies for a merge patch. It unmarshals a document one level at a time,
// copying each object's and array's bytes again at every level above it,
// so its cost is the sum, over the patch's objects and arrays, of their
// length: a 60 KB patch nested 10,000 deep cost 300 MB and seconds, and a
// few of them took the daemon past 1.3 GiB. kube-apiserver uses the same
// function with no bound. A 3 MiB patch nested 20 deep stays under it.
const maxMergePatchCopyBytes = 64 << 20

// checkMergePatchCost refuses, with a 413, a merge patch whose nested
// objects and arrays add up to more than maxMergePatchCopyBytes. It scans
// the bytes once; what is not JSON is left to the decoder.
func checkMergePatchCost(patch []byte) error {
	if n := nestedBytes(patch, maxMergePatchCopyBytes); n > maxMergePatchCopyBytes {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum nesting cost of a merge patch is %d bytes (the length of every object and array, added up), got more", maxMergePatchCopyBytes))
	}
	return nil
}

// nestedBytes returns the sum of the lengths of the objects and arrays in
// the JSON text b, stopping once it passes limit. Past encoding/json's
// nesting limit (10,000) the decoder refuses the text anyway.
func nestedBytes(b []byte, limit int64) int64 {
	var total int64
	var open []int // offsets of the enclosing '{' and '['
	inString, escaped := false, false
	for i, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if len(open) >= 10000 {
				return total
			}
			open = append(open, i)
		case '}', ']':
			if n := len(open); n > 0 {
				total += int64(i - open[n-1] + 1)
				open = open[:n-1]
				if total > limit {
					return total
				}
			}
		}
	}
	return total
}
