package registry

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme holds the Go types of the groups edgeapi serves, and nothing else
// (client-go's kubernetes/scheme would link every API group): core/v1,
// coordination.k8s.io/v1, events.k8s.io/v1, apiextensions.k8s.io/v1,
// rbac.authorization.k8s.io/v1, authorization.k8s.io/v1 (the reviews) and
// authentication.k8s.io/v1 (the reviews and TokenRequest), meta.k8s.io v1
// and v1beta1
// (Table, PartialObjectMetadata) and apidiscovery.k8s.io/v2 (aggregated
// discovery, which clients may ask for as protobuf). Each group's
// AddToScheme also registers metav1's options, Status and WatchEvent for
// that group version.
//
// Its defaulting functions are the few kube-apiserver applies to these
// kinds when it decodes a request body (k8s.io/api carries none): call
// Scheme.Default(obj) after decoding and after patching.
var Scheme = runtime.NewScheme()

// Codecs is a codec factory over Scheme whose serializers reject unknown
// and duplicate fields (strict). Code that implements fieldValidation=Warn
// builds its own non-strict serializers over Scheme.
var Codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
	utilruntime.Must(eventsv1.AddToScheme(Scheme))
	utilruntime.Must(rbacv1.AddToScheme(Scheme))
	utilruntime.Must(authorizationv1.AddToScheme(Scheme))
	// authentication.k8s.io/v1 for TokenRequest, the body and answer of
	// serviceaccounts/token, and SelfSubjectReview.
	utilruntime.Must(authenticationv1.AddToScheme(Scheme))
	utilruntime.Must(apidiscoveryv2.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme)) // with its defaulting (SetDefaults_CustomResourceDefinition)
	utilruntime.Must(metav1.AddMetaToScheme(Scheme))
	utilruntime.Must(metav1beta1.AddMetaToScheme(Scheme))
	// Unversioned meta types (Status, APIVersions, APIGroupList, ...) in
	// their own group version, as kube-apiserver's scheme has them.
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)

	Scheme.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj interface{}) { defaultSecret(obj.(*corev1.Secret)) })
	Scheme.AddTypeDefaultingFunc(&corev1.SecretList{}, func(obj interface{}) {
		list := obj.(*corev1.SecretList)
		for i := range list.Items {
			defaultSecret(&list.Items[i])
		}
	})
	addRBACDefaults(Scheme)
	Scheme.AddTypeDefaultingFunc(&corev1.Service{}, func(obj interface{}) { defaultService(obj.(*corev1.Service)) })
	Scheme.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj interface{}) { defaultNamespace(obj.(*corev1.Namespace)) })
	Scheme.AddTypeDefaultingFunc(&corev1.NamespaceList{}, func(obj interface{}) {
		list := obj.(*corev1.NamespaceList)
		for i := range list.Items {
			defaultNamespace(&list.Items[i])
		}
	})
}

// defaultSecret is kube-apiserver's SetDefaults_Secret.
func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// defaultNamespace is kube-apiserver's SetDefaults_Namespace and
// SetDefaults_NamespaceStatus. A Namespace without a name yet
// (generateName) gets its name label in Canonicalize.
func defaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}
