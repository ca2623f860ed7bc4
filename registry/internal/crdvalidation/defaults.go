package crdvalidation

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Defaults inside metadata are checked as part of a whole object of this
// made-up type, as kube-apiserver does.
const (
	defaultsAPIVersion = "validation/v1"
	defaultsKind       = "Validation"
)

// defaults checks every default of the structural schema root (a
// resource root): it must survive pruning, give valid metadata, validate
// against its own node's schema, and pass the x-kubernetes-validations
// rules of its node and the nodes below (as a create and as an update to
// itself). Defaults under additionalProperties are forbidden elsewhere
// and not visited here. Running rules spends compile, which bounds their
// compiling, and one runtime cost budget for all defaults: once that is
// spent, the other defaults are not checked.
func defaults(root *structuralschema.Structural, fld *field.Path, requirePruned bool, compile *compileAllowance) field.ErrorList {
	if !root.XEmbeddedResource {
		clone := *root
		clone.XEmbeddedResource = true
		root = &clone
	}
	d := defaultChecker{requirePruned: requirePruned, compile: compile, runBudget: celconfig.RuntimeCELCostBudget}
	// One conversion for the whole tree: each node's OpenAPI schema is
	// the matching part of it, and converting each node with a default
	// on its own would cost the square of the schema's depth.
	d.visit(root, root.ToKubeOpenAPI(), rulesBelow(root), fld, nil, nil, false)
	return d.errs
}

// pathStep is the last step from a resource to a node: a property name,
// or an array item when index is true. up is the step before it (nil at
// the resource).
type pathStep struct {
	up    *pathStep
	name  string
	index bool
}

// defaultChecker collects the causes of bad defaults.
type defaultChecker struct {
	requirePruned bool
	compile       *compileAllowance
	// runBudget is the CEL cost left for running rules on defaults; below
	// zero, no more defaults are checked.
	runBudget int64
	errs      field.ErrorList
}

// visit checks the default of s and of the nodes below it; o is s as an
// OpenAPI schema. resource is the schema of the enclosing resource (the
// root or an embedded one) and steps the way from it to s; inMeta says s
// lies in that resource's apiVersion, kind or metadata.
func (d *defaultChecker) visit(s *structuralschema.Structural, o *spec.Schema, r *ruleTree, fld *field.Path, resource *structuralschema.Structural, steps *pathStep, inMeta bool) {
	if s == nil || o == nil || r == nil || d.runBudget < 0 {
		return
	}
	if s.XEmbeddedResource {
		resource, steps, inMeta = s, nil, false
	}
	if s.Default.Object != nil {
		if inMeta {
			d.checkInMeta(s, o, r.units, fld, resource, steps)
		} else {
			d.check(s, o, r.units, fld, s == resource)
		}
	}
	if s.Items != nil && o.Items != nil {
		d.visit(s.Items, o.Items.Schema, r.items, fld.Child("items"), resource, &pathStep{up: steps, index: true}, inMeta)
	}
	for _, name := range sortedKeys(s.Properties) {
		sub, subO := s.Properties[name], o.Properties[name]
		d.visit(&sub, &subO, r.properties[name], fld.Child("properties").Key(name), resource, &pathStep{up: steps, name: name}, inMeta || (s.XEmbeddedResource && resourceMetaFields[name]))
	}
}

// check validates a default outside resource metadata: pruned, with
// valid metadata if it is (or embeds) a resource, and valid for s and
// its rules. resourceRoot: s is the root of a resource.
func (d *defaultChecker) check(s *structuralschema.Structural, o *spec.Schema, ruleUnits int, fld *field.Path, resourceRoot bool) {
	value := s.Default.Object
	p := fld.Child("default")
	if d.requirePruned {
		pruned := runtime.DeepCopyJSONValue(value)
		pruning.Prune(pruned, s, s.XEmbeddedResource)
		if !reflect.DeepEqual(pruned, value) {
			d.errs = append(d.errs, field.Invalid(p, value, "must not have unknown fields"))
		}
	}
	if err := schemaobjectmeta.Coerce(p, value, s, s.XEmbeddedResource, false); err != nil {
		d.errs = append(d.errs, err)
		return
	}
	if errs := schemaobjectmeta.Validate(p, value, s, s.XEmbeddedResource); len(errs) > 0 {
		d.errs = append(d.errs, errs...)
		return
	}
	if errs := valueErrors(p, value, o); len(errs) > 0 {
		d.errs = append(d.errs, errs...)
		return
	}
	d.runRules(s, p, resourceRoot, ruleUnits)
}

// checkInMeta validates a default inside a resource's apiVersion, kind
// or metadata: the resource it would produce, with nothing else set,
// must have valid metadata, and the value must be valid for s.
func (d *defaultChecker) checkInMeta(s *structuralschema.Structural, o *spec.Schema, ruleUnits int, fld *field.Path, resource *structuralschema.Structural, steps *pathStep) {
	value := s.Default.Object
	p := fld.Child("default")
	var obj any = runtime.DeepCopyJSONValue(value)
	for step := steps; step != nil; step = step.up {
		if step.index {
			obj = []any{obj}
		} else {
			obj = map[string]any{step.name: obj}
		}
	}
	m, ok := obj.(map[string]any)
	if !ok {
		// Only possible with no steps, which inMeta rules out.
		d.errs = append(d.errs, field.InternalError(p, fmt.Errorf("default inside metadata is not in an object")))
		return
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = defaultsKind
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = defaultsAPIVersion
	}
	if err := schemaobjectmeta.Coerce(nil, m, resource, true, false); err != nil {
		d.errs = append(d.errs, field.Invalid(p, value, fmt.Sprintf("must result in valid metadata: %v", err)))
		return
	}
	if errs := schemaobjectmeta.Validate(nil, m, resource, true); len(errs) > 0 {
		d.errs = append(d.errs, field.Invalid(p, value, fmt.Sprintf("must result in valid metadata: %v", errs.ToAggregate())))
		return
	}
	if errs := valueErrors(p, value, o); len(errs) > 0 {
		d.errs = append(d.errs, errs...)
		return
	}
	d.runRules(s, p, s == resource, ruleUnits)
}

// runRules runs the rules of s and of the nodes below it on the default
// of s, at fld: as an update from the default to itself and, if that
// passes, as a create (rules with optionalOldSelf see no old value). A
// rule that does not compile fails here too, with the compiler's error.
// units is the compile cost of the rules (see ruleTree).
func (d *defaultChecker) runRules(s *structuralschema.Structural, fld *field.Path, resourceRoot bool, units int) {
	if units == 0 {
		return // no rules
	}
	if ok, errs := d.compile.spend(units, fld); !ok {
		d.errs = append(d.errs, errs...)
		return
	}
	v := cel.NewValidator(s, resourceRoot, celconfig.PerCallLimit)
	if v == nil {
		return
	}
	value := s.Default.Object
	errs, left := v.Validate(context.Background(), fld, s, value, value, d.runBudget)
	if len(errs) == 0 {
		var leftAsCreate int64
		errs, leftAsCreate = v.Validate(context.Background(), fld, s, value, nil, d.runBudget)
		left = min(left, leftAsCreate)
	}
	d.errs = append(d.errs, errs...)
	d.runBudget = left
}

// ruleTree mirrors a structural schema (its items and properties; no
// defaults lie under additionalProperties) with the compile cost of the
// rules at and below each node: for each node with rules, its cost as
// compileRules counts it. A validator for the node compiles all of them.
// Built once, it spares walking the subtree of every default.
type ruleTree struct {
	units, nodes int
	items        *ruleTree
	properties   map[string]*ruleTree
}

// rulesBelow builds the ruleTree of s.
func rulesBelow(s *structuralschema.Structural) *ruleTree {
	if s == nil {
		return nil
	}
	r := &ruleTree{nodes: 1}
	add := func(sub *ruleTree) {
		if sub != nil {
			r.units += sub.units
			r.nodes += sub.nodes
		}
	}
	r.items = rulesBelow(s.Items)
	add(r.items)
	if s.AdditionalProperties != nil {
		add(rulesBelow(s.AdditionalProperties.Structural))
	}
	if len(s.Properties) > 0 {
		r.properties = make(map[string]*ruleTree, len(s.Properties))
		for name := range s.Properties {
			sub := s.Properties[name]
			r.properties[name] = rulesBelow(&sub)
			add(r.properties[name])
		}
	}
	if len(s.XValidations) > 0 {
		r.units += compileNodeCost + r.nodes
		for _, v := range s.XValidations {
			r.units += ruleCompileCost(v.Rule, v.MessageExpression)
		}
	}
	return r
}

// valueErrors validates value against o with kube-openapi's validator,
// the one kube-apiserver uses, and words the result as kube-apiserver
// does.
func valueErrors(fld *field.Path, value any, o *spec.Schema) field.ErrorList {
	result := validate.NewSchemaValidator(o, nil, "", strfmt.Default).Validate(value)
	if result.IsValid() {
		return nil
	}
	var errs field.ErrorList
	for _, err := range result.Errors {
		verr, ok := err.(*openapierrors.Validation)
		if !ok {
			errs = append(errs, field.Invalid(fld, "", err.Error()))
			continue
		}
		p := fld
		if verr.Name != "" && verr.Name != "." {
			p = p.Child(strings.TrimPrefix(verr.Name, "."))
		}
		bad := verr.Value
		if bad == nil {
			bad = ""
		}
		switch verr.Code() {
		case openapierrors.RequiredFailCode:
			errs = append(errs, field.Required(p, ""))
		case openapierrors.EnumFailCode:
			allowed := make([]string, 0, len(verr.Values))
			for _, v := range verr.Values {
				if s, ok := v.(string); ok {
					allowed = append(allowed, s)
				} else {
					b, _ := json.Marshal(v)
					allowed = append(allowed, string(b))
				}
			}
			errs = append(errs, field.NotSupported(p, verr.Value, allowed))
		case openapierrors.TooLongFailCode:
			errs = append(errs, field.TooLong(p, "", int(int64Or(verr.Valid, -1))))
		case openapierrors.MaxItemsFailCode, openapierrors.TooManyPropertiesCode:
			errs = append(errs, field.TooMany(p, int(int64Or(verr.Value, -1)), int(int64Or(verr.Valid, -1))))
		case openapierrors.InvalidTypeCode:
			errs = append(errs, field.TypeInvalid(p, bad, verr.Error()))
		default:
			errs = append(errs, field.Invalid(p, bad, verr.Error()))
		}
	}
	return errs
}

// int64Or returns v if it is an int64, else fallback.
func int64Or(v any, fallback int64) int64 {
	if i, ok := v.(int64); ok {
		return i
	}
	return fallback
}
