package rbac

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// htmlEscaper is how kube-apiserver escapes the forbidden message.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// ForbiddenMessage is kube-apiserver's description of a denied request,
// before escaping:
//
//	User "u" cannot get resource "pods/log" in API group "" in the namespace "ns"
//	User "u" cannot list resource "nodes" in API group "" at the cluster scope
//	User "u" cannot get path "/healthz"
func ForbiddenMessage(attrs authorizer.Attributes) string {
	name := ""
	if u := attrs.GetUser(); u != nil {
		name = u.GetName()
	}
	if !attrs.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", name, attrs.GetVerb(), attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := attrs.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, attrs.GetVerb(), resource, attrs.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, attrs.GetVerb(), resource, attrs.GetAPIGroup())
}

// Forbidden is kube-apiserver's 403 for a denied request: the message
// escaped, the authorizer's reason after a colon when there is one, and
// the status details naming the resource, its group and the object name:
//
//	configmaps "a" is forbidden: User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"
//	forbidden: User "u" cannot get path "/healthz"
func Forbidden(attrs authorizer.Attributes, reason string) *apierrors.StatusError {
	msg := htmlEscaper.Replace(ForbiddenMessage(attrs))
	var err error
	if reason == "" {
		err = fmt.Errorf("%s", msg)
	} else {
		err = fmt.Errorf("%s: %s", msg, reason)
	}
	gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
	return apierrors.NewForbidden(gr, attrs.GetName(), err)
}
