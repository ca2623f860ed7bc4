package registry

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/registry/internal/crdvalidation"
)

// crdKind is apiextensions.k8s.io/v1 CustomResourceDefinition, as
// kube-apiserver's apiextensions-apiserver serves it
// (pkg/registry/customresourcedefinition). Only the definitions are stored
// and validated here; the custom resources they define are not served.
func crdKind() *Kind {
	gvk := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
	return &Kind{
		GVK:               gvk,
		Resource:          "customresourcedefinitions",
		Singular:          "customresourcedefinition",
		ListKind:          "CustomResourceDefinitionList",
		InternalPackage:   "apiextensions",
		Namespaced:        false,
		ShortNames:        []string{"crd", "crds"},
		Categories:        []string{"api-extensions"},
		Verbs:             verbsAll,
		StatusSubresource: true,
		StorageResource:   "customresourcedefinitions.apiextensions.k8s.io",
		StorageGVK:        gvk,
		New:               func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:           func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Strategy:          crdStrategy{},
		// kube-apiserver's rest.NewDefaultTableConvertor: the name and the
		// creation time in RFC 3339 (UTC), not an age.
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
			if !ok {
				return nil, fmt.Errorf("customresourcedefinitions table: unexpected object %T", obj)
			}
			return []interface{}{crd.Name, crd.CreationTimestamp.Time.UTC().Format(time.RFC3339)}, nil
		},
		// kube-apiserver's CustomResourceDefinitionToSelectableFields is
		// generic.ObjectMetaFieldsSet(&crd.ObjectMeta, true): it has
		// metadata.namespace (always "") although CRDs are cluster scoped.
		FieldSet: func(obj runtime.Object) fields.Set {
			crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&crd.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
		PrepareForDelete:  prepareCRDForDelete,
	}
}

// CRDCleanupFinalizer holds a deleted CRD until the CRD controller has
// deleted its instances.
const CRDCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// prepareCRDForDelete is what kube-apiserver's CRD storage does on the
// first DELETE: it adds the cleanup finalizer and the Terminating
// condition, in the same write that sets deletionTimestamp.
func prepareCRDForDelete(obj runtime.Object) bool {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return false
	}
	if !slices.Contains(crd.Finalizers, CRDCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, CRDCleanupFinalizer)
	}
	SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Terminating,
		Status:  apiextensionsv1.ConditionTrue,
		Reason:  "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
	return true
}

// FindCRDCondition returns crd's condition of type t, or nil.
func FindCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// SetCRDCondition sets a condition as kube-apiserver does: a new one is
// appended; an existing one takes the new status, reason and message,
// and a new lastTransitionTime only when its status changes (or it had
// none).
func SetCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	c.LastTransitionTime = now
	old := FindCRDCondition(crd, c.Type)
	if old == nil {
		crd.Status.Conditions = append(crd.Status.Conditions, c)
		return
	}
	if old.Status != c.Status || old.LastTransitionTime.IsZero() {
		old.LastTransitionTime = now
	}
	old.Status, old.Reason, old.Message = c.Status, c.Reason, c.Message
}

// crdStrategy is kube-apiserver's pkg/registry/customresourcedefinition
// strategy and status strategy. Validation converts the v1 object to the
// internal version and runs crdvalidation, edgeapi's code for
// kube-apiserver's rules.
type crdStrategy struct{}

// AllowUnconditionalUpdate is false: a PUT needs a resourceVersion.
func (crdStrategy) AllowUnconditionalUpdate() bool             { return false }
func (crdStrategy) NameValidator() func(string, bool) []string { return crdName }

// crdName checks what can be checked of a CRD's name without the object:
// a DNS subdomain. Validate adds the rule that it is
// <spec.names.plural>.<spec.group>.
var crdName = withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)

// PrepareForCreate clears status, sets generation 1 and records the
// storage version in status.storedVersions.
func (crdStrategy) PrepareForCreate(obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	crd.Generation = 1
	addStorageVersion(crd)
}

// PrepareForUpdate keeps status from old, bumps generation when the spec
// changed, and adds a new storage version to status.storedVersions.
func (crdStrategy) PrepareForUpdate(obj, old runtime.Object) {
	crd, oldCRD := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = *oldCRD.Status.DeepCopy()
	if !equality.Semantic.DeepEqual(crd.Spec, oldCRD.Spec) {
		crd.Generation = oldCRD.Generation + 1
	}
	addStorageVersion(crd)
}

// addStorageVersion appends the version marked storage to
// status.storedVersions unless it is there.
func addStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		for _, s := range crd.Status.StoredVersions {
			if s == v.Name {
				return
			}
		}
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		return
	}
}

// Validate is kube-apiserver's ValidateCustomResourceDefinition, then the
// generic object-meta check.
func (crdStrategy) Validate(obj runtime.Object) field.ErrorList {
	crd, err := crdToInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	errs := crdvalidation.Create(crd)
	return withGenericCreate(errs, obj, false)
}

// ValidateUpdate is kube-apiserver's ValidateCustomResourceDefinitionUpdate.
func (crdStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	crd, err := crdToInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	oldCRD, err := crdToInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return crdvalidation.Update(crd, oldCRD)
}

// PrepareForStatusUpdate keeps spec from old, and the metadata a status
// write may not change (labels, annotations, owner references), as
// kube-apiserver's CRD status strategy does. Finalizers may change: that
// is how the cleanup controller lets a deleted CRD go. The spec is shared
// with old, as kube-apiserver shares it: neither is changed afterwards,
// and copying the schemas cost as much as the rest of the write.
func (crdStrategy) PrepareForStatusUpdate(obj, old runtime.Object) {
	crd, oldCRD := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
	crd.Spec = oldCRD.Spec
	crd.Labels = oldCRD.Labels
	crd.Annotations = oldCRD.Annotations
	crd.OwnerReferences = oldCRD.OwnerReferences
}

// ValidateStatusUpdate is kube-apiserver's
// ValidateUpdateCustomResourceDefinitionStatus: object-meta update rules
// and status.acceptedNames. The spec, which a status write cannot change,
// is neither converted nor validated.
func (crdStrategy) ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	crd, err := crdStatusToInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	oldCRD, err := crdStatusToInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return crdvalidation.StatusUpdate(crd, oldCRD)
}

// crdStatusToInternal converts the metadata and status of a v1 CRD to the
// internal version, with an empty spec.
func crdStatusToInternal(obj runtime.Object) (*apiextensions.CustomResourceDefinition, error) {
	in, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("convert CustomResourceDefinition: unexpected object %T", obj)
	}
	return crdToInternal(&apiextensionsv1.CustomResourceDefinition{TypeMeta: in.TypeMeta, ObjectMeta: in.ObjectMeta, Status: in.Status})
}

// crdToInternal converts a v1 CRD to the internal version that
// kube-apiserver validates: identical per-version schemas, subresources,
// printer columns and selectable fields move to the top level.
func crdToInternal(obj runtime.Object) (*apiextensions.CustomResourceDefinition, error) {
	in, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("convert CustomResourceDefinition: unexpected object %T", obj)
	}
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(in.DeepCopy(), out, nil); err != nil {
		return nil, fmt.Errorf("convert CustomResourceDefinition: %w", err)
	}
	return out, nil
}

// WarningsOnCreate is kube-apiserver's: one `unrecognized format "x"`
// warning per schema format its validator does not know.
func (crdStrategy) WarningsOnCreate(obj runtime.Object) []string {
	if !hasUnrecognizedFormat(obj) {
		return nil
	}
	crd, err := crdToInternal(obj)
	if err != nil {
		return nil
	}
	var warnings []string
	for _, f := range unrecognizedFormats(&crd.Spec) {
		warnings = append(warnings, fmt.Sprintf("unrecognized format %q", f))
	}
	return warnings
}

// WarningsOnUpdate warns about the unrecognized formats the update
// introduces, as kube-apiserver does.
func (crdStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	if !hasUnrecognizedFormat(obj) {
		return nil
	}
	crd, err := crdToInternal(obj)
	if err != nil {
		return nil
	}
	oldCRD, err := crdToInternal(old)
	if err != nil {
		return nil
	}
	had := map[string]bool{}
	for _, f := range unrecognizedFormats(&oldCRD.Spec) {
		had[f] = true
	}
	var warnings []string
	for _, f := range unrecognizedFormats(&crd.Spec) {
		if !had[f] {
			warnings = append(warnings, fmt.Sprintf("unrecognized format %q", f))
		}
	}
	return warnings
}

// hasUnrecognizedFormat reports whether obj, a v1 CRD, has a format to
// warn about, without converting it (a conversion copies every schema).
func hasUnrecognizedFormat(obj runtime.Object) bool {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	return !ok || crdvalidation.HasUnrecognizedFormat(&crd.Spec)
}

// unrecognizedFormats lists the formats of spec's schemas that
// kube-apiserver warns about.
func unrecognizedFormats(spec *apiextensions.CustomResourceDefinitionSpec) []string {
	return crdvalidation.UnrecognizedFormats(spec)
}

// ConversionCABundleInvalid reports whether crd's conversion webhook has a
// caBundle that holds no usable certificate: creating such a CRD is
// allowed, and kube-apiserver's establishing controller then sets
// Established to False (InvalidCABundle) instead of True.
func ConversionCABundleInvalid(crd *apiextensionsv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return false
	}
	return crdvalidation.CABundleInvalid(c.Webhook.ClientConfig.CABundle)
}
