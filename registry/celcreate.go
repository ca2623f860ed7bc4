package registry

import (
	"context"
	"math"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
)

// celCreateCheck answers, for an object being created, whether every
// x-kubernetes-validations rule of a schema holds within kube-apiserver's
// cost budget, without building any error. It is the quick path of the
// common case: apiextensions-apiserver's cel.Validator types each value it
// visits by a schema adaptor whose Properties() copies every property of
// the node for each field a rule reads (half of a create's CEL time on a
// 20-field spec). The check compiles the same rules with the same
// declared types and environment, runs them over the same nodes in the
// same way, but types values with schemaCache, which builds those maps
// once. When it cannot say yes (a rule false or failing, the budget
// spent, a rule it does not run), the caller runs cel.Validator, which
// gives kube-apiserver's errors; so the check can only make a valid
// create cheaper, never change an answer.
type celCreateCheck struct {
	// root is nil when the schema has no rule the check runs.
	root *celCreateNode
	// usable is false when the check cannot decide for this schema (a
	// rule that does not compile, a rule with optionalOldSelf, rules
	// under allOf): then every create takes cel.Validator.
	usable bool
}

// celCreateNode mirrors one node of cel.Validator's tree: the rules of a
// schema node and the nodes below it that have rules.
type celCreateNode struct {
	// self types the value the rules see (with apiVersion, kind and
	// metadata for the root of a resource, as cel.Validator types it).
	self common.Schema
	// hasRules is whether the node declares rules at all, transition
	// rules included: cel.Validator checks the budget before them.
	hasRules bool
	// programs are the rules that run on create, in declaration order:
	// rules that read oldSelf are skipped when there is no old object.
	programs   []celgo.Program
	items      *celCreateNode
	additional *celCreateNode
	properties map[string]*celCreateNode
}

// newCELCreateCheck compiles the rules of s (a resource's schema).
func newCELCreateCheck(s *structuralschema.Structural, perCallLimit uint64) *celCreateCheck {
	if s == nil {
		return &celCreateCheck{usable: true}
	}
	root, ok := newCELCreateNode(s, true, model.SchemaDeclType(s, true), perCallLimit)
	return &celCreateCheck{root: root, usable: ok}
}

// newCELCreateNode builds the node of s, of declared type declType; nil
// when nothing at or below s has rules. ok is false when the check cannot
// decide for the schema.
func newCELCreateNode(s *structuralschema.Structural, resourceRoot bool, declType *apiservercel.DeclType, perCallLimit uint64) (n *celCreateNode, ok bool) {
	n = &celCreateNode{hasRules: len(s.XValidations) > 0}
	if n.hasRules {
		compiled, err := cel.Compile(s, declType, perCallLimit, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.StoredExpressionsEnvLoader())
		if err != nil {
			return nil, false
		}
		for i, c := range compiled {
			rule := s.XValidations[i]
			switch {
			case c.Error != nil, rule.OptionalOldSelf != nil && *rule.OptionalOldSelf:
				return nil, false
			case c.Program == nil, c.UsesOldSelf:
				// An empty rule, or a transition rule: not run
				// without an old object.
			default:
				n.programs = append(n.programs, c.Program)
			}
		}
		self := s
		if resourceRoot {
			self = model.WithTypeAndObjectMeta(s)
		}
		n.self = newSchemaCache(self)
	}
	if s.ValueValidation != nil {
		for i := range s.ValueValidation.AllOf {
			if nestedHasRules(&s.ValueValidation.AllOf[i]) {
				return nil, false
			}
		}
	}
	var elemType *apiservercel.DeclType
	if declType != nil {
		elemType = declType.ElemType
	}
	if s.Items != nil {
		if n.items, ok = newCELCreateNode(s.Items, s.Items.XEmbeddedResource, elemType, perCallLimit); !ok {
			return nil, false
		}
	}
	for name, prop := range s.Properties {
		var fieldType *apiservercel.DeclType
		if escaped, isEscapable := apiservercel.Escape(name); isEscapable {
			if declType == nil {
				continue
			}
			f, found := declType.Fields[escaped]
			if !found {
				// Untyped fields are not validated.
				continue
			}
			fieldType = f.Type
		} else if fieldType = model.SchemaDeclType(&prop, prop.XEmbeddedResource); fieldType == nil {
			continue
		}
		child, ok := newCELCreateNode(&prop, prop.XEmbeddedResource, fieldType, perCallLimit)
		if !ok {
			return nil, false
		}
		if child != nil {
			if n.properties == nil {
				n.properties = map[string]*celCreateNode{}
			}
			n.properties[name] = child
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Structural != nil {
		if n.additional, ok = newCELCreateNode(ap.Structural, ap.Structural.XEmbeddedResource, elemType, perCallLimit); !ok {
			return nil, false
		}
	}
	if !n.hasRules && n.items == nil && n.additional == nil && n.properties == nil {
		return nil, true
	}
	return n, true
}

// nestedHasRules reports whether an allOf member declares rules anywhere.
func nestedHasRules(v *structuralschema.NestedValueValidation) bool {
	if v == nil {
		return false
	}
	if len(v.ValidationExtensions.XValidations) > 0 || nestedHasRules(v.Items) || nestedHasRules(v.AdditionalProperties) {
		return true
	}
	for k := range v.Properties {
		p := v.Properties[k]
		if nestedHasRules(&p) {
			return true
		}
	}
	for i := range v.ValueValidation.AllOf {
		if nestedHasRules(&v.ValueValidation.AllOf[i]) {
			return true
		}
	}
	return false
}

// passes reports whether every rule holds on obj within budget (kube's
// per-request runtime cost budget). False means "ask cel.Validator".
func (c *celCreateCheck) passes(ctx context.Context, obj interface{}, budget int64) bool {
	if !c.usable {
		return false
	}
	if c.root == nil {
		return true
	}
	return c.root.passes(ctx, obj, &budget)
}

func (n *celCreateNode) passes(ctx context.Context, obj interface{}, budget *int64) bool {
	if obj == nil {
		// Rules see only values that are set (cel.Validator's rule).
		return true
	}
	if n.hasRules {
		if *budget <= 0 {
			return false
		}
		if len(n.programs) > 0 {
			act := &celSelfActivation{self: common.UnstructuredToVal(obj, n.self)}
			for _, p := range n.programs {
				res, details, err := p.ContextEval(ctx, act)
				if err != nil || details == nil {
					return false
				}
				cost := details.ActualCost()
				if cost == nil || *cost > math.MaxInt64 || int64(*cost) > *budget {
					return false
				}
				*budget -= int64(*cost)
				if res != types.True {
					return false
				}
			}
		}
	}
	switch v := obj.(type) {
	case []interface{}:
		if n.items != nil {
			for _, e := range v {
				if !n.items.passes(ctx, e, budget) {
					return false
				}
			}
		}
	case map[string]interface{}:
		if n.additional != nil {
			for _, e := range v {
				if !n.additional.passes(ctx, e, budget) {
					return false
				}
			}
		}
		if n.properties != nil {
			for k, e := range v {
				if child, ok := n.properties[k]; ok && !child.passes(ctx, e, budget) {
					return false
				}
			}
		}
	}
	return true
}

// celSelfActivation binds self; oldSelf is undeclared on create.
type celSelfActivation struct{ self interface{} }

func (a *celSelfActivation) ResolveName(name string) (interface{}, bool) {
	if name == cel.ScopedVarName {
		return a.self, true
	}
	return nil, false
}

func (a *celSelfActivation) Parent() interpreter.Activation { return nil }

// schemaCache is model.Structural (apiextensions-apiserver's common.Schema
// of a structural schema) with the sub-schemas built once: Properties(),
// Items(), AdditionalProperties() and WithTypeAndObjectMeta() return the
// same values on every call instead of new copies. Everything else is
// model.Structural's. Its results are shared and must not be modified
// (the CEL value adaptors only read them).
type schemaCache struct {
	*model.Structural
	properties map[string]common.Schema
	items      common.Schema
	additional common.SchemaOrBool
	withMeta   common.Schema
}

func newSchemaCache(s *structuralschema.Structural) *schemaCache {
	c := &schemaCache{Structural: &model.Structural{Structural: s}}
	if s.Properties != nil {
		c.properties = make(map[string]common.Schema, len(s.Properties))
		for name, prop := range s.Properties {
			c.properties[name] = newSchemaCache(&prop)
		}
	}
	if s.Items != nil {
		c.items = newSchemaCache(s.Items)
	}
	if s.AdditionalProperties != nil {
		sb := &schemaOrBoolCache{allows: s.AdditionalProperties.Bool}
		if s.AdditionalProperties.Structural != nil {
			sb.schema = newSchemaCache(s.AdditionalProperties.Structural)
		}
		c.additional = sb
	}
	if s.XEmbeddedResource {
		if m := model.WithTypeAndObjectMeta(s); m == s {
			c.withMeta = c
		} else {
			c.withMeta = newSchemaCache(m)
		}
	}
	return c
}

func (c *schemaCache) Properties() map[string]common.Schema { return c.properties }

func (c *schemaCache) Items() common.Schema {
	if c.items == nil {
		return nil
	}
	return c.items
}

func (c *schemaCache) AdditionalProperties() common.SchemaOrBool {
	if c.additional == nil {
		return nil
	}
	return c.additional
}

func (c *schemaCache) WithTypeAndObjectMeta() common.Schema {
	if c.withMeta != nil {
		return c.withMeta
	}
	return c.Structural.WithTypeAndObjectMeta()
}

// schemaOrBoolCache is model.StructuralOrBool over a schemaCache.
type schemaOrBoolCache struct {
	schema common.Schema
	allows bool
}

func (sb *schemaOrBoolCache) Schema() common.Schema { return sb.schema }
func (sb *schemaOrBoolCache) Allows() bool          { return sb.allows }
