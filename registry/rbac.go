package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rbac.authorization.k8s.io/v1 kinds: Role, ClusterRole, RoleBinding
// and ClusterRoleBinding, stored as served. Their strategies are
// kube-apiserver's pkg/registry/rbac strategies (nothing to prepare, PUT
// may create) with the rules of its pkg/apis/rbac/validation, written
// here from reading it. kube-apiserver serves them without short names or
// categories. Escalation checks (pkg/registry/rbac/*/policybased) belong
// to the authorizer and are not part of these kinds.

func roleKind() *Kind {
	return &Kind{
		GVK:                 rbacv1.SchemeGroupVersion.WithKind("Role"),
		Resource:            "roles",
		Singular:            "role",
		ListKind:            "RoleList",
		InternalPackage:     "rbac",
		Namespaced:          true,
		Verbs:               verbsAll,
		StorageResource:     "roles.rbac.authorization.k8s.io",
		StorageGVK:          rbacv1.SchemeGroupVersion.WithKind("Role"),
		New:                 func() runtime.Object { return &rbacv1.Role{} },
		NewList:             func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy:            roleStrategy{},
		AllowCreateOnUpdate: true,
		TableColumns:        createdAtColumns(),
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			r, ok := obj.(*rbacv1.Role)
			if !ok {
				return nil, fmt.Errorf("roles table: unexpected object %T", obj)
			}
			return createdAtRow(&r.ObjectMeta), nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			r, ok := obj.(*rbacv1.Role)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&r.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
	}
}

func clusterRoleKind() *Kind {
	return &Kind{
		GVK:                 rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		Resource:            "clusterroles",
		Singular:            "clusterrole",
		ListKind:            "ClusterRoleList",
		InternalPackage:     "rbac",
		Verbs:               verbsAll,
		StorageResource:     "clusterroles.rbac.authorization.k8s.io",
		StorageGVK:          rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		New:                 func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:             func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy:            clusterRoleStrategy{},
		AllowCreateOnUpdate: true,
		TableColumns:        createdAtColumns(),
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			r, ok := obj.(*rbacv1.ClusterRole)
			if !ok {
				return nil, fmt.Errorf("clusterroles table: unexpected object %T", obj)
			}
			return createdAtRow(&r.ObjectMeta), nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			r, ok := obj.(*rbacv1.ClusterRole)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&r.ObjectMeta, false)
		},
		FieldSelectorKeys: []string{"metadata.name"},
	}
}

func roleBindingKind() *Kind {
	return &Kind{
		GVK:                 rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		Resource:            "rolebindings",
		Singular:            "rolebinding",
		ListKind:            "RoleBindingList",
		InternalPackage:     "rbac",
		Namespaced:          true,
		Verbs:               verbsAll,
		StorageResource:     "rolebindings.rbac.authorization.k8s.io",
		StorageGVK:          rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		New:                 func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:             func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy:            roleBindingStrategy{},
		AllowCreateOnUpdate: true,
		TableColumns:        bindingColumns("roleBinding", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			b, ok := obj.(*rbacv1.RoleBinding)
			if !ok {
				return nil, fmt.Errorf("rolebindings table: unexpected object %T", obj)
			}
			return bindingRow(&b.ObjectMeta, b.RoleRef, b.Subjects), nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			b, ok := obj.(*rbacv1.RoleBinding)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&b.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
	}
}

func clusterRoleBindingKind() *Kind {
	return &Kind{
		GVK:                 rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		Resource:            "clusterrolebindings",
		Singular:            "clusterrolebinding",
		ListKind:            "ClusterRoleBindingList",
		InternalPackage:     "rbac",
		Verbs:               verbsAll,
		StorageResource:     "clusterrolebindings.rbac.authorization.k8s.io",
		StorageGVK:          rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		New:                 func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:             func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy:            clusterRoleBindingStrategy{},
		AllowCreateOnUpdate: true,
		TableColumns:        bindingColumns("clusterRoleBinding", rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			b, ok := obj.(*rbacv1.ClusterRoleBinding)
			if !ok {
				return nil, fmt.Errorf("clusterrolebindings table: unexpected object %T", obj)
			}
			return bindingRow(&b.ObjectMeta, b.RoleRef, b.Subjects), nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			b, ok := obj.(*rbacv1.ClusterRoleBinding)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&b.ObjectMeta, false)
		},
		FieldSelectorKeys: []string{"metadata.name"},
	}
}

// createdAtColumns are kube-apiserver's default table columns, which it
// uses for Roles and ClusterRoles (they have no printer of their own).
func createdAtColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
}

func createdAtRow(m *metav1.ObjectMeta) []interface{} {
	return []interface{}{m.Name, m.CreationTimestamp.Time.UTC().Format(time.RFC3339)}
}

// bindingColumns are kube-apiserver's binding printer columns. Its Role
// column describes roleRef with the v1beta1 text, which is the v1 text
// without its last sentence.
func bindingColumns(what, roleRefDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Role", Type: "string", Description: strings.TrimSuffix(roleRefDoc, " This field is immutable.")},
		ageColumn(),
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

// bindingRow prints a binding as kube-apiserver's printer does: the role
// as Kind/name, and the subjects of each kind comma-separated
// (ServiceAccounts as namespace/name).
func bindingRow(m *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []interface{}{m.Name, ref.Kind + "/" + ref.Name, translateTimestampSince(m.CreationTimestamp),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

// rbacName is kube-apiserver's ValidateRBACName: any name that is a valid
// path segment.
var rbacName = withPathSegment(nil)

// rbacStrategy holds what the four RBAC strategies share.
type rbacStrategy struct{}

func (rbacStrategy) AllowUnconditionalUpdate() bool             { return true }
func (rbacStrategy) NameValidator() func(string, bool) []string { return rbacName }
func (rbacStrategy) PrepareForCreate(runtime.Object)            {}
func (rbacStrategy) PrepareForUpdate(_, _ runtime.Object)       {}

// roleStrategy is kube-apiserver's pkg/registry/rbac/role strategy.
type roleStrategy struct{ rbacStrategy }

func (roleStrategy) Validate(obj runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.Role)
	return withGenericCreate(validateRole(&r.ObjectMeta, r.Rules, true), obj, true)
}

func (roleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r, oldR := obj.(*rbacv1.Role), old.(*rbacv1.Role)
	errs := validateRole(&r.ObjectMeta, r.Rules, true)
	return append(errs, validateObjectMetaUpdate(&r.ObjectMeta, &oldR.ObjectMeta)...)
}

// clusterRoleStrategy is kube-apiserver's pkg/registry/rbac/clusterrole
// strategy.
type clusterRoleStrategy struct{ rbacStrategy }

func (clusterRoleStrategy) Validate(obj runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.ClusterRole)
	return withGenericCreate(validateClusterRole(r, false), obj, false)
}

// ValidateUpdate keeps accepting label values in aggregation selectors
// that were invalid but stored before, as kube-apiserver does.
func (clusterRoleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r, oldR := obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole)
	errs := validateClusterRole(r, hasInvalidSelectorLabelValue(oldR))
	return append(errs, validateObjectMetaUpdate(&r.ObjectMeta, &oldR.ObjectMeta)...)
}

// roleBindingStrategy is kube-apiserver's pkg/registry/rbac/rolebinding
// strategy.
type roleBindingStrategy struct{ rbacStrategy }

func (roleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.RoleBinding)
	return withGenericCreate(validateBinding(&b.ObjectMeta, b.RoleRef, b.Subjects, true), obj, true)
}

func (roleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	b, oldB := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
	return validateBindingUpdate(&b.ObjectMeta, &oldB.ObjectMeta, b.RoleRef, oldB.RoleRef, b.Subjects, true)
}

// clusterRoleBindingStrategy is kube-apiserver's
// pkg/registry/rbac/clusterrolebinding strategy.
type clusterRoleBindingStrategy struct{ rbacStrategy }

func (clusterRoleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.ClusterRoleBinding)
	return withGenericCreate(validateBinding(&b.ObjectMeta, b.RoleRef, b.Subjects, false), obj, false)
}

func (clusterRoleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	b, oldB := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
	return validateBindingUpdate(&b.ObjectMeta, &oldB.ObjectMeta, b.RoleRef, oldB.RoleRef, b.Subjects, false)
}

// validateRole checks a Role's or ClusterRole's metadata (the core
// group's object-meta rules) and rules.
func validateRole(m *metav1.ObjectMeta, rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	errs := validateCoreObjectMeta(m, namespaced, rbacName)
	for i := range rules {
		errs = append(errs, validatePolicyRule(&rules[i], namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// validateClusterRole adds the aggregation rule's checks to validateRole.
func validateClusterRole(r *rbacv1.ClusterRole, allowInvalidLabelValue bool) field.ErrorList {
	errs := validateRole(&r.ObjectMeta, r.Rules, false)
	if r.AggregationRule == nil {
		return errs
	}
	selectorsPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(selectorsPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		sel := &r.AggregationRule.ClusterRoleSelectors[i]
		p := selectorsPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, opts, p)...)
		// kube-apiserver also parses the selector and reports the
		// (nil) parsed value when parsing fails.
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(p, nil, "invalid label selector."))
		}
	}
	return errs
}

// hasInvalidSelectorLabelValue reports whether a stored ClusterRole's
// aggregation selectors hold a label value that validation now rejects.
func hasInvalidSelectorLabelValue(r *rbacv1.ClusterRole) bool {
	if r.AggregationRule == nil {
		return false
	}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		sel := &r.AggregationRule.ClusterRoleSelectors[i]
		if len(metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

// validatePolicyRule is kube-apiserver's ValidatePolicyRule: a rule needs
// verbs; a non-resource rule names nothing else and is only allowed in
// ClusterRoles; a resource rule names API groups and resources.
func validatePolicyRule(rule *rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateBinding is kube-apiserver's ValidateRoleBinding (namespaced)
// and ValidateClusterRoleBinding.
func validateBinding(m *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	errs := validateCoreObjectMeta(m, namespaced, rbacName)
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(field.NewPath("roleRef", "apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(field.NewPath("roleRef", "kind"), ref.Kind, kinds))
	}
	namePath := field.NewPath("roleRef", "name")
	if ref.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			errs = append(errs, field.Invalid(namePath, ref.Name, msg))
		}
	}
	for i := range subjects {
		errs = append(errs, validateSubject(&subjects[i], namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// validateBindingUpdate is kube-apiserver's binding update validation:
// the create rules, the object-meta update rules, and an immutable
// roleRef.
func validateBindingUpdate(m, oldM *metav1.ObjectMeta, ref, oldRef rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	errs := validateBinding(m, ref, subjects, namespaced)
	errs = append(errs, validateObjectMetaUpdate(m, oldM)...)
	if ref != oldRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), internalRoleRef(ref), "cannot change roleRef"))
	}
	return errs
}

// internalRoleRef is kube-apiserver's internal rbac.RoleRef, which has no
// JSON tags: the "cannot change roleRef" message prints the value as
// {"APIGroup":...,"Kind":...,"Name":...}.
type internalRoleRef struct {
	APIGroup string
	Kind     string
	Name     string
}

// validateSubject is kube-apiserver's ValidateRoleBindingSubject.
func validateSubject(s *rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range serviceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// serviceAccountName is the core group's ValidateServiceAccountName: a
// DNS subdomain.
var serviceAccountName = apimachineryvalidation.NameIsDNSSubdomain

// defaultRoleRef and defaultSubject are kube-apiserver's rbac/v1
// defaulting: an empty roleRef.apiGroup is the RBAC group, and so is a
// User's or Group's empty apiGroup.
func defaultRoleRef(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
}

func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// addRBACDefaults registers the RBAC defaulting on s, for objects and
// lists.
func addRBACDefaults(s *runtime.Scheme) {
	rb := func(b *rbacv1.RoleBinding) { defaultRoleRef(&b.RoleRef); defaultSubjects(b.Subjects) }
	crb := func(b *rbacv1.ClusterRoleBinding) { defaultRoleRef(&b.RoleRef); defaultSubjects(b.Subjects) }
	s.AddTypeDefaultingFunc(&rbacv1.RoleBinding{}, func(obj interface{}) { rb(obj.(*rbacv1.RoleBinding)) })
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBinding{}, func(obj interface{}) { crb(obj.(*rbacv1.ClusterRoleBinding)) })
	s.AddTypeDefaultingFunc(&rbacv1.RoleBindingList{}, func(obj interface{}) {
		l := obj.(*rbacv1.RoleBindingList)
		for i := range l.Items {
			rb(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBindingList{}, func(obj interface{}) {
		l := obj.(*rbacv1.ClusterRoleBindingList)
		for i := range l.Items {
			crb(&l.Items[i])
		}
	})
}
