package registry

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCRDValidate_DeepSchema validates CRDs whose schema nests one
// object in the next, 1,000 and 4,000 deep (about the most a request body
// can nest), with a default, a validation rule with a fieldPath, or a
// misused list type at every level. Checking grows with the schema's
// size, not its square; only the causes do not: each names its path, so
// one cause per level costs depth² (4,000 deep: 4,000 causes, about 1.7
// s on the 2-core test machine, against 0.08 s for a valid schema).
// Compiling the rules does grow with the square (each level's rule is
// compiled with the type of everything below it): the compile budget
// stops it at about 2.5 s, 1,000 or 4,000 deep, where kube-apiserver
// takes 10 s and 5 minutes.
func BenchmarkCRDValidate_DeepSchema(b *testing.B) {
	levels := map[string]string{
		"default":   `{type: object, default: {}, properties: {a: `,
		"fieldPath": `{type: object, x-kubernetes-validations: [{rule: "true", fieldPath: ".a"}], properties: {a: `,
		"listType":  `{type: object, x-kubernetes-list-type: set, properties: {a: `,
	}
	for _, name := range []string{"default", "fieldPath", "listType"} {
		for _, depth := range []int{1000, 4000} {
			b.Run(fmt.Sprintf("%s/%d", name, depth), func(b *testing.B) {
				t := &testing.T{}
				crd := newCronTabCRD(t)
				setSchema(1, `{type: object, properties: {a: `+strings.Repeat(levels[name], depth)+`{type: string}`+strings.Repeat(`}}`, depth)+`}}`)(t, crd)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					crdStrategy{}.Validate(crd)
				}
			})
		}
	}
}
