// Package handlers holds the JSON patch operation type under the package
// and type name kube-apiserver's errors quote ("[]handlers.jsonPatchOp"),
// so that edgeapi's messages for a malformed JSON patch are the same.
package handlers

import (
	"fmt"

	kjson "sigs.k8s.io/json"
)

// jsonPatchOp is the shape of one RFC 6902 operation, for strict decoding.
type jsonPatchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	From  string      `json:"from"`
	Value interface{} `json:"value"`
}

// StrictJSONPatchErrors decodes a JSON patch strictly and returns its
// unknown or duplicate fields as errors, or a decoding error.
func StrictJSONPatchErrors(patch []byte) ([]error, error) {
	var v []jsonPatchOp
	errs, err := kjson.UnmarshalStrict(patch, &v)
	if err != nil {
		return nil, err
	}
	for i, e := range errs {
		errs[i] = fmt.Errorf("json patch %v", e)
	}
	return errs, nil
}
