package httpapi

// TEMPORARY stub until discovery.go lands; deleted then.

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

func apiVersions(string) *metav1.APIVersions                                       { return &metav1.APIVersions{} }
func apiGroupList(*registry.Registry) *metav1.APIGroupList                         { return &metav1.APIGroupList{} }
func apiGroup(*registry.Registry, string) *metav1.APIGroup                         { return nil }
func apiResourceList(*registry.Registry, schema.GroupVersion) *metav1.APIResourceList { return nil }
func aggregatedDiscovery(*registry.Registry, bool) *apidiscoveryv2.APIGroupDiscoveryList {
	return &apidiscoveryv2.APIGroupDiscoveryList{}
}
