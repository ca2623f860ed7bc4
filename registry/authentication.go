package registry

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// selfSubjectReviewKind is authentication.k8s.io/v1 SelfSubjectReview
// (kubectl auth whoami), as kube-apiserver's
// pkg/registry/authentication/selfsubjectreview serves it: whatever the
// body holds, the answer is a new object created now whose status is
// the requesting user.
func selfSubjectReviewKind() *Kind {
	return reviewKind(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"),
		"selfsubjectreviews", "selfsubjectreview", "authentication", false,
		func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, reviewSelfSubject)
}

func reviewSelfSubject(_ context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, errNotA("SelfSubjectReview", obj)
	}
	if a.User == nil {
		return nil, errNoUser()
	}
	extra := a.User.GetExtra()
	out := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{
				Username: a.User.GetName(),
				UID:      a.User.GetUID(),
				Groups:   a.User.GetGroups(),
				Extra:    make(map[string]authenticationv1.ExtraValue, len(extra)),
			},
		},
	}
	for k, v := range extra {
		out.Status.UserInfo.Extra[k] = v
	}
	return out, nil
}
