package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/edgeapi/edgeapi/registry"
)

// Discovery documents, built from the registry as kube-apiserver 1.36
// serves them. These are pure functions; the handlers in routes.go encode
// their results with encoding/json, so each document carries the TypeMeta
// kube-apiserver sends: /api and /api/v1 have a kind but no apiVersion, the
// /apis documents have apiVersion "v1".

// apiVersions is the /api document. serverAddr is the address clients
// reach the server at ("127.0.0.1:6443"), advertised for every client CIDR.
func apiVersions(serverAddr string) *metav1.APIVersions {
	return &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddr},
		},
	}
}

// apiResourceList is the /api/v1 or /apis/<group>/<version> document, or
// nil when nothing is served at gv. Resources are sorted by name, each
// subresource ("namespaces/status") right after its resource.
func apiResourceList(reg *registry.Snapshot, gv schema.GroupVersion) *metav1.APIResourceList {
	var resources []metav1.APIResource
	for _, k := range reg.Kinds() {
		if k.GroupVersion() != gv {
			continue
		}
		resources = append(resources, metav1.APIResource{
			Name:               k.Resource,
			SingularName:       k.Singular,
			Namespaced:         k.Namespaced,
			Kind:               k.GVK.Kind,
			Verbs:              k.Verbs,
			ShortNames:         k.ShortNames,
			Categories:         k.Categories,
			StorageVersionHash: storageVersionHash(k.StorageGVK),
		})
		for _, sub := range subresources(k) {
			r := metav1.APIResource{
				Name:       k.Resource + "/" + sub.name,
				Namespaced: k.Namespaced,
				Kind:       k.GVK.Kind,
				Verbs:      sub.verbs,
			}
			if sub.kind != nil {
				r.Group, r.Version, r.Kind = sub.kind.Group, sub.kind.Version, sub.kind.Kind
			}
			resources = append(resources, r)
		}
	}
	if resources == nil {
		return nil
	}
	// By resource; a resource's subresources follow it in subresources'
	// order.
	sort.SliceStable(resources, func(i, j int) bool {
		a, _, _ := strings.Cut(resources[i].Name, "/")
		b, _, _ := strings.Cut(resources[j].Name, "/")
		return a < b
	})
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
		APIResources: resources,
	}
	if gv.Group == "" {
		list.APIVersion = ""
	}
	return list
}

// apiGroupList is the /apis document: every group but the core group, in
// kube-apiserver's order (see groupOrder).
func apiGroupList(reg *registry.Snapshot) *metav1.APIGroupList {
	list := &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{},
	}
	for _, group := range groupOrder(reg) {
		list.Groups = append(list.Groups, *apiGroupOf(group, groupVersions(reg, group)))
	}
	return list
}

// apiGroup is the /apis/<group> document, or nil when the group is not
// served (the core group is never served here).
func apiGroup(reg *registry.Snapshot, group string) *metav1.APIGroup {
	if group == "" {
		return nil
	}
	versions := groupVersions(reg, group)
	if len(versions) == 0 {
		return nil
	}
	g := apiGroupOf(group, versions)
	g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	return g
}

func apiGroupOf(group string, versions []string) *metav1.APIGroup {
	g := &metav1.APIGroup{Name: group}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// aggregatedDiscovery is the aggregated discovery document
// (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) of /api (core) or /apis.
// The HTTP layer sends it as
// "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList".
func aggregatedDiscovery(reg *registry.Snapshot, core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	groups := []string{""}
	if !core {
		groups = groupOrder(reg)
	}
	for _, group := range groups {
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group}}
		for _, v := range groupVersions(reg, group) {
			item.Versions = append(item.Versions, apidiscoveryv2.APIVersionDiscovery{
				Version:   v,
				Resources: resourceDiscovery(reg, schema.GroupVersion{Group: group, Version: v}),
				Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			})
		}
		if len(item.Versions) > 0 {
			list.Items = append(list.Items, item)
		}
	}
	return list
}

// resourceDiscovery lists the resources at gv, sorted by name, with their
// subresources. Response kinds carry only the kind, as kube-apiserver's do
// for resources of their own group version.
func resourceDiscovery(reg *registry.Snapshot, gv schema.GroupVersion) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	for _, k := range reg.Kinds() {
		if k.GroupVersion() != gv {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if k.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		r := apidiscoveryv2.APIResourceDiscovery{
			Resource:         k.Resource,
			ResponseKind:     &metav1.GroupVersionKind{Kind: k.GVK.Kind},
			Scope:            scope,
			SingularResource: k.Singular,
			Verbs:            k.Verbs,
			ShortNames:       k.ShortNames,
			Categories:       k.Categories,
		}
		if k.Unstructured {
			// Custom resources name their group and version.
			r.ResponseKind = &metav1.GroupVersionKind{Group: k.GVK.Group, Version: k.GVK.Version, Kind: k.GVK.Kind}
		}
		for _, sub := range subresources(k) {
			rk := &metav1.GroupVersionKind{Kind: k.GVK.Kind}
			switch {
			case sub.kind != nil:
				rk = &metav1.GroupVersionKind{Group: sub.kind.Group, Version: sub.kind.Version, Kind: sub.kind.Kind}
			case k.Unstructured:
				rk = r.ResponseKind
			}
			r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource:  sub.name,
				ResponseKind: rk,
				Verbs:        sub.verbs,
			})
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

type subresource struct {
	name  string
	verbs []string
	// kind is the subresource's response kind when it is not the
	// resource's (autoscaling/v1 Scale).
	kind *schema.GroupVersionKind
}

// subresources returns k's subresources (finalize, status, scale, token), with the verbs
// kube-apiserver advertises for them.
func subresources(k *registry.Kind) []subresource {
	var subs []subresource
	if k.FinalizeSubresource {
		subs = append(subs, subresource{"finalize", []string{"update"}, nil})
	}
	if k.StatusSubresource {
		subs = append(subs, subresource{"status", []string{"get", "patch", "update"}, nil})
	}
	if k.Scale != nil {
		// After status, as kube-apiserver lists a custom resource's.
		subs = append(subs, subresource{"scale", []string{"get", "patch", "update"}, &schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}})
	}
	if k.TokenSubresource {
		subs = append(subs, subresource{"token", []string{"create"}, &schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}})
	}
	return subs
}

// storageVersionHash is kube-apiserver's discovery.StorageVersionHash: the
// first 8 bytes of the SHA-256 of "group/version/kind" of the storage
// version, base64-encoded. Kinds sharing storage share the hash.
func storageVersionHash(gvk schema.GroupVersionKind) string {
	if gvk.Kind == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// groupVersions returns the versions served in group, preferred first
// (kube-aware version order: v2 before v1 before v1beta1).
func groupVersions(reg *registry.Snapshot, group string) []string {
	seen := map[string]bool{}
	var versions []string
	for _, k := range reg.Kinds() {
		if k.GVK.Group == group && !seen[k.GVK.Version] {
			seen[k.GVK.Version] = true
			versions = append(versions, k.GVK.Version)
		}
	}
	sort.Slice(versions, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0
	})
	return versions
}

// kubeGroupOrder is the order of kube-apiserver 1.36's /apis groups (by
// descending APIService GroupPriorityMinimum, then name), as recorded in
// the s33 transcript. Groups not listed (CRD groups, priority 1000) follow,
// by name.
var kubeGroupOrder = []string{
	"apiregistration.k8s.io",
	"apps",
	"events.k8s.io",
	"authentication.k8s.io",
	"authorization.k8s.io",
	"autoscaling",
	"batch",
	"certificates.k8s.io",
	"networking.k8s.io",
	"policy",
	"rbac.authorization.k8s.io",
	"storage.k8s.io",
	"admissionregistration.k8s.io",
	"apiextensions.k8s.io",
	"scheduling.k8s.io",
	"coordination.k8s.io",
	"node.k8s.io",
	"discovery.k8s.io",
	"resource.k8s.io",
	"flowcontrol.apiserver.k8s.io",
}

// groupOrder returns the served non-core groups in /apis order.
func groupOrder(reg *registry.Snapshot) []string {
	seen := map[string]bool{}
	var groups []string
	for _, k := range reg.Kinds() {
		if g := k.GVK.Group; g != "" && !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	rank := func(g string) int {
		for i, x := range kubeGroupOrder {
			if x == g {
				return i
			}
		}
		return len(kubeGroupOrder)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if ri, rj := rank(groups[i]), rank(groups[j]); ri != rj {
			return ri < rj
		}
		return groups[i] < groups[j]
	})
	return groups
}
