package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EnforceMountableSecretsAnnotation is the ServiceAccount annotation
// kube-apiserver warns about since 1.32 (it is only read by the
// ServiceAccount admission plugin, which edgeapi has not, since it serves
// no Pods).
const EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

func serviceAccountKind() *Kind {
	return &Kind{
		GVK:              corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Resource:         "serviceaccounts",
		Singular:         "serviceaccount",
		ListKind:         "ServiceAccountList",
		InternalPackage:  "core",
		Namespaced:       true,
		ShortNames:       []string{"sa"},
		Verbs:            verbsAll,
		StorageResource:  "serviceaccounts",
		StorageGVK:       corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		New:              func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:          func() runtime.Object { return &corev1.ServiceAccountList{} },
		Strategy:         serviceAccountStrategy{},
		TokenSubresource: true,
		// kube-apiserver 1.36 prints only the name and the age: the
		// SECRETS column went with the token Secrets.
		TableColumns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			sa, ok := obj.(*corev1.ServiceAccount)
			if !ok {
				return nil, fmt.Errorf("serviceaccounts table: unexpected object %T", obj)
			}
			return []interface{}{sa.Name, translateTimestampSince(sa.CreationTimestamp)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			sa, ok := obj.(*corev1.ServiceAccount)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&sa.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
	}
}

// serviceAccountStrategy is kube-apiserver's
// pkg/registry/core/serviceaccount strategy.
type serviceAccountStrategy struct{}

func (serviceAccountStrategy) AllowUnconditionalUpdate() bool { return true }
func (serviceAccountStrategy) NameValidator() func(string, bool) []string {
	return serviceAccountNameSegment
}

// serviceAccountNameSegment is apimachinery's ValidateServiceAccountName (a DNS
// subdomain) with the path-segment rule.
var serviceAccountNameSegment = withPathSegment(apimachineryvalidation.ValidateServiceAccountName)

func (serviceAccountStrategy) PrepareForCreate(obj runtime.Object) {
	cleanSecretReferences(obj.(*corev1.ServiceAccount))
}

func (serviceAccountStrategy) PrepareForUpdate(obj, old runtime.Object) {
	cleanSecretReferences(obj.(*corev1.ServiceAccount))
}

// cleanSecretReferences keeps only the name of each secrets entry, as
// kube-apiserver's strategy does.
func cleanSecretReferences(sa *corev1.ServiceAccount) {
	for i, s := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: s.Name}
	}
}

func (serviceAccountStrategy) Validate(obj runtime.Object) field.ErrorList {
	sa := obj.(*corev1.ServiceAccount)
	return withGenericCreate(validateCoreObjectMeta(&sa.ObjectMeta, true, apimachineryvalidation.ValidateServiceAccountName), obj, true)
}

// ValidateUpdate is kube-apiserver's ValidateServiceAccountUpdate: the
// object-meta update rules, then the create rules again.
func (serviceAccountStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	sa, oldSA := obj.(*corev1.ServiceAccount), old.(*corev1.ServiceAccount)
	errs := validateCoreObjectMetaUpdate(&sa.ObjectMeta, &oldSA.ObjectMeta)
	return append(errs, validateCoreObjectMeta(&sa.ObjectMeta, true, apimachineryvalidation.ValidateServiceAccountName)...)
}

func (serviceAccountStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return enforceMountableSecretsWarning(obj.(*corev1.ServiceAccount), nil)
}

func (serviceAccountStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	return enforceMountableSecretsWarning(obj.(*corev1.ServiceAccount), old.(*corev1.ServiceAccount))
}

// enforceMountableSecretsWarning is kube-apiserver's warning for a
// ServiceAccount that newly sets the deprecated
// kubernetes.io/enforce-mountable-secrets annotation.
func enforceMountableSecretsWarning(sa, old *corev1.ServiceAccount) []string {
	if old != nil {
		if _, ok := old.Annotations[EnforceMountableSecretsAnnotation]; ok {
			return nil
		}
	}
	if _, ok := sa.Annotations[EnforceMountableSecretsAnnotation]; !ok {
		return nil
	}
	return []string{fmt.Sprintf("metadata.annotations[%s]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets", EnforceMountableSecretsAnnotation)}
}
