package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/edgeapi/edgeapi/auth/authz"
)

// The authorization.k8s.io/v1 reviews, as kube-apiserver's
// pkg/registry/authorization serves them (written here from reading it and
// its pkg/apis/authorization/validation):
//
//   - SelfSubjectAccessReview asks the authorizer about the requesting
//     user;
//   - SubjectAccessReview about the user, groups, extra and uid of its
//     spec;
//   - LocalSubjectAccessReview likewise, in the namespace of its URL;
//   - SelfSubjectRulesReview lists the rules that apply to the requesting
//     user in a namespace.
//
// The access reviews answer with the object they were given (managedFields
// included), status filled in; the rules review with a new object that
// has only a status.

func selfSubjectAccessReviewKind() *Kind {
	return reviewKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"),
		"selfsubjectaccessreviews", "selfsubjectaccessreview", "authorization", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, reviewSelfSubjectAccess)
}

func subjectAccessReviewKind() *Kind {
	return reviewKind(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"),
		"subjectaccessreviews", "subjectaccessreview", "authorization", false,
		func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, reviewSubjectAccess)
}

func localSubjectAccessReviewKind() *Kind {
	return reviewKind(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"),
		"localsubjectaccessreviews", "localsubjectaccessreview", "authorization", true,
		func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, reviewLocalSubjectAccess)
}

func selfSubjectRulesReviewKind() *Kind {
	return reviewKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"),
		"selfsubjectrulesreviews", "selfsubjectrulesreview", "authorization", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, reviewSelfSubjectRules)
}

func reviewSelfSubjectAccess(ctx context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, errNotA("SelfSubjectAccessReview", obj)
	}
	if errs := validateSelfSubjectAccessReview(sar); len(errs) > 0 {
		return nil, invalidReview(authorizationv1.GroupName, errs)
	}
	if a.User == nil {
		return nil, errNoUser()
	}
	var attrs authorizer.AttributesRecord
	if ra := sar.Spec.ResourceAttributes; ra != nil {
		attrs = resourceAttributes(a.User, ra)
	} else {
		attrs = nonResourceAttributes(a.User, sar.Spec.NonResourceAttributes)
	}
	sar.Status = decide(ctx, a.Authorizer, attrs)
	return sar, nil
}

func reviewSubjectAccess(ctx context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, errNotA("SubjectAccessReview", obj)
	}
	errs := validateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	if !objectMetaIsEmpty(sar.ObjectMeta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), sar.ObjectMeta, `must be empty`))
	}
	if len(errs) > 0 {
		return nil, invalidReview(authorizationv1.GroupName, errs)
	}
	sar.Status = decide(ctx, a.Authorizer, specAttributes(&sar.Spec))
	return sar, nil
}

// reviewLocalSubjectAccess answers a LocalSubjectAccessReview. Its
// namespace is the URL's: the HTTP layer sets an empty metadata.namespace
// to it and refuses another (400), before this runs, so kube-apiserver's
// own checks of the two (400 "namespace is required on this type",
// "spec.resourceAttributes.namespace must match namespace") never fire.
func reviewLocalSubjectAccess(ctx context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, errNotA("LocalSubjectAccessReview", obj)
	}
	errs := validateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	meta := sar.ObjectMeta
	meta.Namespace = ""
	if !objectMetaIsEmpty(meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), sar.ObjectMeta, `must be empty except for namespace`))
	}
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), internalNonResource(sar.Spec.NonResourceAttributes), `disallowed on this kind of request`))
	}
	if len(errs) > 0 {
		return nil, invalidReview(authorizationv1.GroupName, errs)
	}
	sar.Status = decide(ctx, a.Authorizer, specAttributes(&sar.Spec))
	return sar, nil
}

func reviewSelfSubjectRules(ctx context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error) {
	rr, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, errNotA("SelfSubjectRulesReview", obj)
	}
	if a.User == nil {
		return nil, errNoUser()
	}
	namespace := rr.Spec.Namespace
	if namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	resolver := a.Rules
	if resolver == nil {
		resolver = authz.AlwaysAllowRules{}
	}
	resourceRules, nonResourceRules, incomplete, err := resolver.RulesFor(ctx, a.User, namespace)
	out := &authorizationv1.SelfSubjectRulesReview{
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    make([]authorizationv1.ResourceRule, len(resourceRules)),
			NonResourceRules: make([]authorizationv1.NonResourceRule, len(nonResourceRules)),
			Incomplete:       incomplete,
		},
	}
	for i, r := range resourceRules {
		out.Status.ResourceRules[i] = authorizationv1.ResourceRule{
			Verbs:         r.GetVerbs(),
			APIGroups:     r.GetAPIGroups(),
			Resources:     r.GetResources(),
			ResourceNames: r.GetResourceNames(),
		}
	}
	for i, r := range nonResourceRules {
		out.Status.NonResourceRules[i] = authorizationv1.NonResourceRule{
			Verbs:           r.GetVerbs(),
			NonResourceURLs: r.GetNonResourceURLs(),
		}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// decide asks az about attrs and words the answer as an access review's
// status. A nil az allows everything.
func decide(ctx context.Context, az authorizer.Authorizer, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := authorizer.DecisionAllow, "", error(nil)
	if az != nil {
		d, reason, err = az.Authorize(ctx, attrs)
	}
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         d == authorizer.DecisionAllow,
		Denied:          d == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: evaluationError(err, attrs),
	}
}

// evaluationError is kube-apiserver's status.evaluationError: the
// authorizer's error and a note for each selector that did not parse,
// joined by "; ".
func evaluationError(err error, attrs authorizer.AttributesRecord) string {
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if reqs, err := attrs.GetFieldSelector(); err != nil {
		msgs = append(msgs, selectorIgnored("fieldSelector", len(reqs) > 0))
	}
	if reqs, err := attrs.GetLabelSelector(); err != nil {
		msgs = append(msgs, selectorIgnored("labelSelector", len(reqs) > 0))
	}
	return strings.Join(msgs, "; ")
}

func selectorIgnored(which string, partly bool) string {
	if partly {
		return "spec.resourceAttributes." + which + " partially ignored due to parse error"
	}
	return "spec.resourceAttributes." + which + " ignored due to parse error"
}

// specAttributes are the attributes a SubjectAccessReview's spec asks
// about: its user, groups, uid and extra, and its resource or
// non-resource attributes.
func specAttributes(spec *authorizationv1.SubjectAccessReviewSpec) authorizer.AttributesRecord {
	u := &user.DefaultInfo{Name: spec.User, Groups: spec.Groups, UID: spec.UID}
	if spec.Extra != nil {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	if spec.ResourceAttributes != nil {
		return resourceAttributes(u, spec.ResourceAttributes)
	}
	return nonResourceAttributes(u, spec.NonResourceAttributes)
}

// resourceAttributes are the attributes of a resource request by u: an
// empty version means every version ("*"). Selectors are parsed as
// kube-apiserver parses them; one that fails is kept as a parse error,
// with the requirements that did parse.
func resourceAttributes(u user.Info, in *authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	version := in.Version
	if version == "" {
		version = "*"
	}
	a := authorizer.AttributesRecord{
		User:            u,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      version,
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
		ResourceRequest: true,
	}
	if s := in.LabelSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := labels.Parse(s.RawSelector); err != nil {
				a.LabelSelectorRequirements, a.LabelSelectorParsingErr = nil, err
			} else {
				a.LabelSelectorRequirements, _ = sel.Requirements()
				a.LabelSelectorParsingErr = nil
			}
		}
		if len(s.Requirements) > 0 {
			a.LabelSelectorRequirements, a.LabelSelectorParsingErr = labelRequirements(s.Requirements)
		}
	}
	if s := in.FieldSelector; s != nil {
		if s.RawSelector != "" {
			if sel, err := fields.ParseSelector(s.RawSelector); err != nil {
				a.FieldSelectorRequirements, a.FieldSelectorParsingErr = nil, err
			} else {
				a.FieldSelectorRequirements, a.FieldSelectorParsingErr = sel.Requirements(), nil
			}
		}
		if len(s.Requirements) > 0 {
			a.FieldSelectorRequirements, a.FieldSelectorParsingErr = fieldRequirements(s.Requirements)
		}
	}
	return a
}

// nonResourceAttributes are the attributes of a request by u for a
// non-resource path.
func nonResourceAttributes(u user.Info, in *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Path: in.Path, Verb: in.Verb}
}

// labelOperators maps a label selector requirement's operator to the
// selection operator it means.
var labelOperators = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

// labelRequirements converts requirements, keeping those that convert
// and returning the errors of the others (requirements are ANDed, so
// dropping one only broadens the check); nil when none converts.
func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	var reqs labels.Requirements
	var errs []error
	for _, r := range in {
		op, ok := labelOperators[r.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reqs = append(reqs, *req)
	}
	return reqs, utilerrors.NewAggregate(errs)
}

// fieldRequirements is labelRequirements for field selectors, which take
// In and NotIn with one value each (as = and !=).
func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var reqs fields.Requirements
	var errs []error
	for _, r := range in {
		if len(r.Values) > 1 {
			errs = append(errs, errors.New("fieldSelectors do not yet support multiple values"))
			continue
		}
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			if len(r.Values) != 1 {
				errs = append(errs, errors.New("fieldSelectors in must have one value"))
				continue
			}
			reqs = append(reqs, fields.Requirement{Field: r.Key, Operator: selection.Equals, Value: r.Values[0]})
		case metav1.FieldSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, errors.New("fieldSelectors not in must have one value"))
				continue
			}
			reqs = append(reqs, fields.Requirement{Field: r.Key, Operator: selection.NotEquals, Value: r.Values[0]})
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support %v", r.Operator))
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", r.Operator))
		}
	}
	return reqs, utilerrors.NewAggregate(errs)
}

// validateSelfSubjectAccessReview is kube-apiserver's validation of a
// SelfSubjectAccessReview: exactly one of resourceAttributes and
// nonResourceAttributes, valid selectors, and empty metadata
// (managedFields aside).
func validateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateAttributesChoice(sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes, specPath)
	errs = append(errs, validateResourceAttributes(sar.Spec.ResourceAttributes)...)
	if !objectMetaIsEmpty(sar.ObjectMeta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), sar.ObjectMeta, `must be empty`))
	}
	return errs
}

// validateSubjectAccessReviewSpec is kube-apiserver's validation of a
// (Local)SubjectAccessReview's spec: validateSelfSubjectAccessReview's
// checks of the attributes, and a user or a group.
func validateSubjectAccessReviewSpec(spec *authorizationv1.SubjectAccessReviewSpec, specPath *field.Path) field.ErrorList {
	errs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, specPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(specPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return append(errs, validateResourceAttributes(spec.ResourceAttributes)...)
}

// validateAttributesChoice requires exactly one of ra and nra. Its errors
// print nra as kube-apiserver's internal type prints as JSON (no JSON
// tags: {"Path":"/x","Verb":"get"}), or null.
func validateAttributesChoice(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ra != nil && nra != nil {
		errs = append(errs, field.Invalid(specPath.Child("nonResourceAttributes"), internalNonResource(nra), `cannot be specified in combination with resourceAttributes`))
	}
	if ra == nil && nra == nil {
		errs = append(errs, field.Invalid(specPath.Child("resourceAttributes"), internalNonResource(nra), `exactly one of nonResourceAttributes or resourceAttributes must be specified`))
	}
	return errs
}

// internalNonResourceAttributes has the fields of kube-apiserver's
// internal authorization.NonResourceAttributes, without JSON tags, so
// that a validation error prints it as kube-apiserver does.
type internalNonResourceAttributes struct {
	Path string
	Verb string
}

func internalNonResource(in *authorizationv1.NonResourceAttributes) *internalNonResourceAttributes {
	if in == nil {
		return nil
	}
	return &internalNonResourceAttributes{Path: in.Path, Verb: in.Verb}
}

// validateResourceAttributes checks the selectors of ra, at
// spec.resourceAttributes whatever the kind.
func validateResourceAttributes(ra *authorizationv1.ResourceAttributes) field.ErrorList {
	if ra == nil {
		return nil
	}
	p := field.NewPath("spec.resourceAttributes")
	var errs field.ErrorList
	if s := ra.FieldSelector; s != nil {
		fp := p.Child("fieldSelector")
		errs = append(errs, validateSelectorChoice(s.RawSelector, len(s.Requirements), fp)...)
		// Newer clients may know operators this server does not: those
		// are not errors.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range s.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, fp.Child("requirements").Index(i))...)
		}
	}
	if s := ra.LabelSelector; s != nil {
		lp := p.Child("labelSelector")
		errs = append(errs, validateSelectorChoice(s.RawSelector, len(s.Requirements), lp)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range s.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, lp.Child("requirements").Index(i))...)
		}
	}
	return errs
}

// validateSelectorChoice requires exactly one of a raw selector and
// requirements.
func validateSelectorChoice(raw string, requirements int, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if raw != "" && requirements > 0 {
		errs = append(errs, field.Invalid(p.Child("rawSelector"), raw, "may not specified at the same time as requirements"))
	}
	if raw == "" && requirements == 0 {
		errs = append(errs, field.Required(p.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", p)))
	}
	return errs
}
