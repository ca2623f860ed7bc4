package registry

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// immutableMsg is the Forbidden detail for changes to an immutable
// ConfigMap or Secret.
const immutableMsg = "field is immutable when `immutable` is set"

func configMapKind() *Kind {
	return &Kind{
		GVK:                 corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:            "configmaps",
		Singular:            "configmap",
		ListKind:            "ConfigMapList",
		InternalPackage:     "core",
		Namespaced:          true,
		ShortNames:          []string{"cm"},
		Verbs:               verbsAll,
		StorageResource:     "configmaps",
		StorageGVK:          corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		New:                 func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:             func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy:            configMapStrategy{},
		AllowCreateOnUpdate: false,
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
			ageColumn(),
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				return nil, fmt.Errorf("configmaps table: unexpected object %T", obj)
			}
			return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), translateTimestampSince(cm.CreationTimestamp)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&cm.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
	}
}

// configMapStrategy is kube-apiserver's pkg/registry/core/configmap
// strategy.
type configMapStrategy struct{}

func (configMapStrategy) PrepareForCreate(obj runtime.Object)        {}
func (configMapStrategy) PrepareForUpdate(obj, old runtime.Object)   {}
func (configMapStrategy) AllowUnconditionalUpdate() bool             { return true }
func (configMapStrategy) NameValidator() func(string, bool) []string { return configMapName }

var configMapName = withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)

func (configMapStrategy) Validate(obj runtime.Object) field.ErrorList {
	return withGenericCreate(validateConfigMap(obj.(*corev1.ConfigMap)), obj, true)
}

func (configMapStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	return validateConfigMapUpdate(cm, oldCM)
}

// validateConfigMap is kube-apiserver's ValidateConfigMap.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateCoreObjectMeta(&cm.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > corev1.MaxSecretSize {
		// The empty path means the whole object.
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

// validateConfigMapUpdate is kube-apiserver's ValidateConfigMapUpdate.
func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := validateCoreObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	if isTrue(old.Immutable) {
		if !isTrue(cm.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	return append(errs, validateConfigMap(cm)...)
}

func isTrue(b *bool) bool { return b != nil && *b }
