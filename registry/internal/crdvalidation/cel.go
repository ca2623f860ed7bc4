package crdvalidation

import (
	"fmt"
	"math"

	celgo "github.com/google/cel-go/cel"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// This file compiles x-kubernetes-validations rules and estimates their
// cost, as kube-apiserver does when it validates a CRD. Compiling uses
// the same leaf package the custom resource handlers evaluate rules
// with (pkg/apiserver/schema/cel), so a rule accepted here is one they
// can run.

// The limits on the estimated cost of rules, in CEL cost units, that
// kube-apiserver 1.36 sets.
const (
	// ruleCostLimit bounds one rule or messageExpression, multiplied by
	// the number of times its node can occur in an object.
	ruleCostLimit = 10_000_000
	// schemaCostLimit bounds the sum over one openAPIV3Schema.
	schemaCostLimit = 100_000_000
	// expensiveFloor: a rule costing less than this (1% of
	// schemaCostLimit) is not named when the sum is over the limit.
	expensiveFloor = schemaCostLimit / 100
	// expensiveNamed is how many of the most expensive rules are named.
	expensiveNamed = 4
)

// Compiling is bounded by edgeapi (kube-apiserver is not): each rule is
// parsed, type-checked, made a program and estimated, in an environment
// that declares the CEL type of its node, whose size is that of the
// schema below the node. A schema with a rule on each of its thousand
// nested levels would take kube-apiserver about ten seconds, four
// thousand levels five minutes. compileBudget is spent in units of about
// 20 µs of compiling on a 2-core machine.
const (
	// compileBudget is what one CRD may spend, about 5 s.
	compileBudget = 250_000
	// compileNodeCost is spent per node with rules (two environments are
	// built for it), plus one unit per node its type declares. Checking a
	// default against the rules below it compiles them all again, and
	// spends as much.
	compileNodeCost = 50
	// compileRuleCost is spent per rule, plus one unit per
	// compileRuleBytes bytes of rule and messageExpression.
	compileRuleCost  = 25
	compileRuleBytes = 5
)

// compileAllowance is what is left of compileBudget while a CRD is
// validated. It is shared by every schema of the CRD.
type compileAllowance struct {
	left int
	// refused: a node's rules were not compiled for lack of budget (and
	// that was reported).
	refused bool
}

func newCompileAllowance() *compileAllowance {
	return &compileAllowance{left: compileBudget}
}

// ruleCompileCost is the compile cost of one rule, beyond its node's.
func ruleCompileCost(rule, messageExpression string) int {
	return compileRuleCost + (len(rule)+len(messageExpression))/compileRuleBytes
}

// spend takes units from the budget for compiling the rules at fld and
// reports whether it could. When it cannot, for the first time, it
// returns edgeapi's cause (kube-apiserver has no such limit); later
// refusals have none, and nothing is compiled any more.
func (a *compileAllowance) spend(units int, fld *field.Path) (bool, field.ErrorList) {
	if a.refused {
		return false, nil
	}
	if units > a.left {
		a.refused = true
		return false, field.ErrorList{field.Forbidden(fld, "the x-kubernetes-validations rules of this CustomResourceDefinition are too many or too large to compile: these rules and those checked after them were not compiled (try fewer rules, or rules on smaller parts of the schema)")}
	}
	a.left -= units
	return true, nil
}

// costAdvice ends every cost cause.
const costAdvice = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"

// celEnvSet is kube-apiserver's base CEL environment for its default
// compatibility version (cached by the environment package).
func celEnvSet() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
}

// expressions is the set of rules and messageExpressions of the stored
// CRD. An update may keep them although they use library functions newer
// than the compatibility version: they compile in the stored-expressions
// environment, new ones in the new-expressions environment. It is
// cel.EnvLoader.
type expressions struct {
	rules, messages map[string]bool
}

func (e expressions) RuleEnv(set *environment.EnvSet, expr string) *celgo.Env {
	if e.rules[expr] {
		return set.StoredExpressionsEnv()
	}
	return set.NewExpressionsEnv()
}

func (e expressions) MessageExpressionEnv(set *environment.EnvSet, expr string) *celgo.Env {
	if e.messages[expr] {
		return set.StoredExpressionsEnv()
	}
	return set.NewExpressionsEnv()
}

// storedExpressions collects the rules and messageExpressions of every
// schema of spec (nil: a create, where there are none).
func storedExpressions(spec *apiextensions.CustomResourceDefinitionSpec) expressions {
	e := expressions{rules: map[string]bool{}, messages: map[string]bool{}}
	if spec == nil {
		return e
	}
	anySchema(spec, func(s *apiextensions.JSONSchemaProps) bool {
		for _, r := range s.XValidations {
			e.rules[r.Rule] = true
			if r.MessageExpression != "" {
				e.messages[r.MessageExpression] = true
			}
		}
		return false
	})
	return e
}

// unchangedSchemas names the versions of crd whose schema (per version or
// top-level) is the same in old. Their rules are not held to
// ruleCostLimit again: an upgrade that changes cost estimates must not
// lock a CRD that was accepted.
func unchangedSchemas(crd, old *apiextensions.CustomResourceDefinition) map[string]bool {
	same := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		now, err := apiextensions.GetSchemaForVersion(crd, v.Name)
		if err != nil {
			continue
		}
		before, err := apiextensions.GetSchemaForVersion(old, v.Name)
		if err != nil {
			continue
		}
		if equality.Semantic.DeepEqual(now, before) {
			same[v.Name] = true
		}
	}
	return same
}

// celType is what CEL needs to compile a node's rules: its structural
// schema and the CEL type of self.
type celType struct {
	structural *structuralschema.Structural
	decl       *apiservercel.DeclType
}

// celScope follows a schema walk with what the rules of a node need: the
// node's CEL type, found lazily (from the parent's when it has one, as
// converting a schema costs its size), how many times the node can occur
// in an object, and the running cost of the whole schema. A nil scope
// means the rules are not compiled: the schema is not structural, or not
// a place where rules run (not, allOf, anyOf, oneOf, ...).
type celScope struct {
	parent *celScope
	schema *apiextensions.JSONSchemaProps
	// fromParent finds the node's type in the parent's; nil when it
	// returns nothing.
	fromParent func(*celType) *celType
	// underRules: the node or one above it has rules, so its type is
	// needed.
	underRules bool
	// occurrences is the most times the node can occur in one object,
	// nil when some list or map above it is unbounded.
	occurrences *uint64
	cost        *costTotal

	loaded  bool
	typ     *celType
	typeErr error
}

// rootCELScope starts a walk at a root schema, which occurs once.
func rootCELScope(root *apiextensions.JSONSchemaProps) *celScope {
	one := uint64(1)
	return &celScope{schema: root, underRules: len(root.XValidations) > 0, occurrences: &one, cost: &costTotal{}}
}

// property, items and additionalProperties return the scope of a child
// (nil below a nil scope).
func (c *celScope) property(sub *apiextensions.JSONSchemaProps, name string) *celScope {
	return c.child(sub, func(t *celType) *celType {
		if t.structural.Properties == nil {
			return nil
		}
		escaped, ok := apiservercel.Escape(name)
		if !ok {
			return nil // names CEL cannot spell are not fields
		}
		f, ok := t.decl.Fields[escaped]
		if !ok {
			return nil // nor are fields of types CEL does not know
		}
		s := t.structural.Properties[name]
		return &celType{structural: &s, decl: f.Type}
	})
}

func (c *celScope) items(sub *apiextensions.JSONSchemaProps) *celScope {
	return c.child(sub, func(t *celType) *celType {
		if t.structural.Items == nil {
			return nil
		}
		return &celType{structural: t.structural.Items, decl: t.decl.ElemType}
	})
}

func (c *celScope) additionalProperties(sub *apiextensions.JSONSchemaProps) *celScope {
	return c.child(sub, func(t *celType) *celType {
		if t.structural.AdditionalProperties == nil {
			return nil
		}
		return &celType{structural: t.structural.AdditionalProperties.Structural, decl: t.decl.ElemType}
	})
}

func (c *celScope) child(sub *apiextensions.JSONSchemaProps, fromParent func(*celType) *celType) *celScope {
	if c == nil {
		return nil
	}
	s := &celScope{parent: c, schema: sub, fromParent: fromParent, underRules: c.underRules, cost: c.cost}
	if sub != nil && len(sub.XValidations) > 0 {
		s.underRules = true
	}
	if c.occurrences != nil {
		if n := elementsPer(c.schema); n != nil {
			product := saturatingProduct(*c.occurrences, *n)
			s.occurrences = &product
		}
	}
	return s
}

// elementsPer is how many children one occurrence of s can have: maxItems
// of a list, maxProperties of a map (nil when unset: unbounded), 1 for a
// struct or a scalar.
func elementsPer(s *apiextensions.JSONSchemaProps) *uint64 {
	var limit *int64
	switch {
	case s.Type == "array":
		limit = s.MaxItems
	case s.Type == "object" && s.AdditionalProperties != nil:
		limit = s.MaxProperties
	default:
		one := uint64(1)
		return &one
	}
	if limit == nil {
		return nil
	}
	n := uint64(max(*limit, 0))
	return &n
}

// celTypeOf returns the node's CEL type, nil if no rule needs it.
func (c *celScope) celTypeOf() (*celType, error) {
	if c == nil || !c.underRules {
		return nil, nil
	}
	if c.loaded {
		return c.typ, c.typeErr
	}
	c.loaded = true
	if c.parent != nil {
		up, err := c.parent.celTypeOf()
		if err != nil {
			c.typeErr = err
			return nil, err
		}
		if up != nil {
			if c.typ = c.fromParent(up); c.typ != nil {
				return c.typ, nil
			}
		}
	}
	c.typ, c.typeErr = convertForCEL(c.schema, c.parent == nil || c.schema.XEmbeddedResource)
	return c.typ, c.typeErr
}

// convertForCEL builds the CEL type of a schema on its own.
func convertForCEL(s *apiextensions.JSONSchemaProps, resourceRoot bool) (*celType, error) {
	structural, err := structuralschema.NewStructural(s)
	if err != nil {
		return nil, err
	}
	decl := model.SchemaDeclType(structural, resourceRoot)
	if decl == nil {
		return nil, fmt.Errorf("unable to convert structural schema to CEL declarations")
	}
	return &celType{structural: structural, decl: decl}, nil
}

// costTotal sums the estimated cost of a schema's rules and keeps the
// most expensive ones, most expensive first.
type costTotal struct {
	sum       uint64
	expensive []ruleCost
}

// ruleCost is the estimated cost of the rule or messageExpression at path.
type ruleCost struct {
	path *field.Path
	cost uint64
}

func (t *costTotal) add(path *field.Path, cost uint64) {
	if math.MaxUint64-t.sum < cost {
		t.sum = math.MaxUint64
	} else {
		t.sum += cost
	}
	if cost < expensiveFloor {
		return
	}
	// After every rule of equal or higher cost seen so far.
	i := 0
	for i < len(t.expensive) && t.expensive[i].cost >= cost {
		i++
	}
	if i == expensiveNamed {
		return
	}
	t.expensive = append(t.expensive[:i], append([]ruleCost{{path, cost}}, t.expensive[i:]...)...)
	if len(t.expensive) > expensiveNamed {
		t.expensive = t.expensive[:expensiveNamed]
	}
}

// overLimit returns the causes of a schema whose rules cost more than
// schemaCostLimit in all: one per most expensive rule, then one for the
// schema at fld.
func (t *costTotal) overLimit(fld *field.Path) field.ErrorList {
	if t.sum <= schemaCostLimit {
		return nil
	}
	var errs field.ErrorList
	for _, e := range t.expensive {
		errs = append(errs, field.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
	}
	return append(errs, field.Forbidden(fld, overBudget("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", t.sum, schemaCostLimit)))
}

// overBudget words a cost over its limit as kube-apiserver does: the
// factor with six decimals under 1.5, one decimal up to 100, then "more
// than 100x".
func overBudget(what string, cost, limit uint64) string {
	f := float64(cost) / float64(limit)
	var factor string
	switch {
	case f > 100:
		factor = "more than 100x"
	case f < 1.5:
		factor = fmt.Sprintf("%fx", f)
	default:
		factor = fmt.Sprintf("%.1fx", f)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s %s", what, factor, costAdvice)
}

// saturatingProduct is a*b, or the largest uint64 when that overflows
// (0 when a is 0).
func saturatingProduct(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// compileRules compiles the x-kubernetes-validations of s, a node whose
// subtree has no schema errors, and returns the causes: rules and
// messageExpressions that do not compile or cost too much, oldSelf where
// old and new values cannot be matched up, and optionalOldSelf without
// oldSelf. Costs are added to the schema's total. nodes is the size of
// the node's CEL type (see node). Once the CRD's compile budget is spent,
// the first node left out gets a cause of its own (edgeapi's, not
// kube-apiserver's) and later ones none.
func (w *walker) compileRules(s *apiextensions.JSONSchemaProps, fld *field.Path, at nodeContext, scope *celScope, nodes int) field.ErrorList {
	rulesPath := fld.Child("x-kubernetes-validations")
	units := compileNodeCost + nodes
	for _, r := range s.XValidations {
		units += ruleCompileCost(r.Rule, r.MessageExpression)
	}
	if ok, errs := w.compile.spend(units, rulesPath); !ok {
		return errs
	}
	t, err := scope.celTypeOf()
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(rulesPath, fmt.Errorf("internal error: failed to construct type information for x-kubernetes-validations rules: %s", err))}
	case t == nil:
		return field.ErrorList{field.InternalError(rulesPath, fmt.Errorf("internal error: failed to retrieve type information for x-kubernetes-validations"))}
	}
	results, err := cel.Compile(t.structural, t.decl, celconfig.PerCallLimit, celEnvSet(), w.stored)
	if err != nil {
		return field.ErrorList{field.InternalError(rulesPath, err)}
	}
	var errs field.ErrorList
	for i, r := range results {
		rule := s.XValidations[i]
		rulePath := rulesPath.Index(i).Child("rule")
		// A rule runs once per occurrence of its node: at most as often
		// as the bounds above it allow, else as often as the smallest
		// value of its type fits in a request.
		times := r.MaxCardinality
		if scope.occurrences != nil {
			times = *scope.occurrences
		}
		cost := saturatingProduct(r.MaxCost, times)
		if !w.oldCosts && cost > ruleCostLimit {
			errs = append(errs, field.Forbidden(rulePath, overBudget("estimated rule cost", cost, ruleCostLimit)))
		}
		scope.cost.add(rulePath, cost)
		if r.Error != nil {
			if r.Error.Type == apiservercel.ErrorTypeRequired {
				errs = append(errs, field.Required(rulePath, r.Error.Detail))
			} else {
				errs = append(errs, field.Invalid(rulePath, rule, r.Error.Detail))
			}
		}
		msgPath := rulesPath.Index(i).Child("messageExpression")
		switch {
		case r.MessageExpressionError != nil:
			errs = append(errs, field.Invalid(msgPath, rule, r.MessageExpressionError.Detail))
		case r.MessageExpression != nil:
			// A message is only built for a failing value: its cost is
			// not multiplied.
			if !w.oldCosts && r.MessageExpressionMaxCost > ruleCostLimit {
				errs = append(errs, field.Forbidden(msgPath, overBudget("estimated messageExpression cost", r.MessageExpressionMaxCost, ruleCostLimit)))
			}
			scope.cost.add(msgPath, r.MessageExpressionMaxCost)
		}
		switch {
		case r.UsesOldSelf && at.uncorrelated != nil:
			errs = append(errs, field.Invalid(rulePath, rule.Rule, fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", at.uncorrelated)))
		case !r.UsesOldSelf && rule.OptionalOldSelf != nil:
			errs = append(errs, field.Invalid(rulesPath.Index(i).Child("optionalOldSelf"), *rule.OptionalOldSelf, "may not be set if oldSelf is not used in rule"))
		}
	}
	return errs
}
