package registry

import (
	"crypto/tls"
	"encoding/json"
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

func secretKind() *Kind {
	return &Kind{
		GVK:             corev1.SchemeGroupVersion.WithKind("Secret"),
		Resource:        "secrets",
		Singular:        "secret",
		ListKind:        "SecretList",
		InternalPackage: "core",
		Namespaced:      true,
		Verbs:           verbsAll,
		StorageResource: "secrets",
		StorageGVK:      corev1.SchemeGroupVersion.WithKind("Secret"),
		NormalizeOnDecode: func(obj runtime.Object) {
			if s, ok := obj.(*corev1.Secret); ok {
				mergeStringData(s)
			}
		},
		New:      func() runtime.Object { return &corev1.Secret{} },
		NewList:  func() runtime.Object { return &corev1.SecretList{} },
		Strategy: secretStrategy{},
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
			{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
			ageColumn(),
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return nil, fmt.Errorf("secrets table: unexpected object %T", obj)
			}
			return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), translateTimestampSince(s.CreationTimestamp)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return nil
			}
			set := objectMetaFieldSet(&s.ObjectMeta, true)
			set["type"] = string(s.Type)
			return set
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace", "type"},
		UnknownFieldLabel: fieldLabelNotSupported,
	}
}

// secretStrategy is kube-apiserver's pkg/registry/core/secret strategy,
// plus what its v1-to-internal conversion does: stringData is merged into
// data (stringData wins) and never stored or returned.
type secretStrategy struct{}

func (secretStrategy) AllowUnconditionalUpdate() bool             { return true }
func (secretStrategy) NameValidator() func(string, bool) []string { return secretName }

var secretName = withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)

func (secretStrategy) PrepareForCreate(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	mergeStringData(s)
	defaultSecret(s)
}

func (secretStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	mergeStringData(s)
	// kube-apiserver keeps the old type when the new one is empty; after
	// defaulting it never is, so a PUT without type means Opaque.
	if s.Type == "" {
		s.Type = oldS.Type
	}
}

// mergeStringData moves stringData into data, as kube-apiserver's
// conversion to its internal version does.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

func (secretStrategy) Validate(obj runtime.Object) field.ErrorList {
	return withGenericCreate(validateSecret(obj.(*corev1.Secret)), obj, true)
}

func (secretStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	return validateSecretUpdate(s, oldS)
}

func (secretStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return secretWarnings(obj.(*corev1.Secret))
}

func (secretStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	return secretWarnings(obj.(*corev1.Secret))
}

// secretWarnings is kube-apiserver's warningsForSecret: a TLS secret whose
// key does not match its certificate is accepted with a warning.
func secretWarnings(s *corev1.Secret) []string {
	if s.Type != corev1.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// validateSecret is kube-apiserver's ValidateSecret.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateCoreObjectMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)

	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}

	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the annotation is required; a controller fills in the rest.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeOpaque, "":
	case corev1.SecretTypeDockercfg:
		b, ok := s.Data[corev1.DockerConfigKey]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.DockerConfigKey), ""))
			break
		}
		if err := json.Unmarshal(b, &map[string]interface{}{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(corev1.DockerConfigKey), "<secret contents redacted>", err.Error()))
		}
	case corev1.SecretTypeDockerConfigJson:
		b, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.DockerConfigJsonKey), ""))
			break
		}
		if err := json.Unmarshal(b, &map[string]interface{}{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(corev1.DockerConfigJsonKey), "<secret contents redacted>", err.Error()))
		}
	case corev1.SecretTypeBasicAuth:
		// Either key may be empty, but one of them must be present.
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPass := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPass {
			errs = append(errs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := s.Data[corev1.TLSCertKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := s.Data[corev1.TLSPrivateKeyKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	// Bootstrap tokens (bootstrap.kubernetes.io/token) and custom types
	// have no server-side checks in kube-apiserver.
	return errs
}

// validateSecretUpdate is kube-apiserver's ValidateSecretUpdate.
func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := validateCoreObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if isTrue(old.Immutable) {
		if !isTrue(s.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return append(errs, validateSecret(s)...)
}
