package registry

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestBuiltin_Reviews(t *testing.T) {
	tests := []struct {
		gvr        string
		kind       string
		singular   string
		namespaced bool
	}{
		{"authorization.k8s.io/v1/selfsubjectaccessreviews", "SelfSubjectAccessReview", "selfsubjectaccessreview", false},
		{"authorization.k8s.io/v1/subjectaccessreviews", "SubjectAccessReview", "subjectaccessreview", false},
		{"authorization.k8s.io/v1/localsubjectaccessreviews", "LocalSubjectAccessReview", "localsubjectaccessreview", true},
		{"authorization.k8s.io/v1/selfsubjectrulesreviews", "SelfSubjectRulesReview", "selfsubjectrulesreview", false},
		{"authentication.k8s.io/v1/selfsubjectreviews", "SelfSubjectReview", "selfsubjectreview", false},
	}
	reg := Builtin()
	for _, tt := range tests {
		t.Run(tt.gvr, func(t *testing.T) {
			k := reg.Lookup(parseGVR(t, tt.gvr))
			if k == nil {
				t.Fatal("not served")
			}
			if k.GVK.Kind != tt.kind || k.Singular != tt.singular || k.Namespaced != tt.namespaced {
				t.Errorf("got kind %s singular %s namespaced %v", k.GVK.Kind, k.Singular, k.Namespaced)
			}
			if k.Stored() || k.Review == nil || !reflect.DeepEqual(k.Verbs, []string{"create"}) {
				t.Errorf("got stored %v verbs %v", k.Stored(), k.Verbs)
			}
			// Discovery lists no storageVersionHash for a kind that is not
			// stored, and nothing may treat it as a storage resource.
			if k.StorageResource != "" || !k.StorageGVK.Empty() || k.ListKind != "" || k.NewList != nil {
				t.Errorf("got storage %q %v list %q", k.StorageResource, k.StorageGVK, k.ListKind)
			}
			for res, sk := range reg.Snapshot().ByStorage() {
				if sk == k {
					t.Errorf("ByStorage()[%q] is the review", res)
				}
			}
			kinds, _, err := Scheme.ObjectKinds(k.New())
			if err != nil || kinds[0] != k.GVK {
				t.Errorf("scheme kinds %v, %v", kinds, err)
			}
		})
	}
}

// fakeAuthorizer answers every request with its decision, reason and
// error, and records the attributes it was asked about.
type fakeAuthorizer struct {
	decision authorizer.Decision
	reason   string
	err      error
	got      authorizer.Attributes
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.got = a
	return f.decision, f.reason, f.err
}

// statusOf returns err's Status, failing t when err is not a StatusError.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v (%T), want a StatusError", err, err)
	}
	return se.ErrStatus
}

func TestReview_AccessReviewInvalid(t *testing.T) {
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}
	nra := &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}
	tests := []struct {
		name string
		obj  runtime.Object
		// want is kube-apiserver's message: the group alone as the kind
		// (see invalidReview), then the causes.
		want string
	}{
		{"self: neither", &authorizationv1.SelfSubjectAccessReview{},
			`.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
		{"self: both", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra, NonResourceAttributes: nra}},
			`.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"Path":"/healthz","Verb":"get"}: cannot be specified in combination with resourceAttributes`},
		{"self: named", &authorizationv1.SelfSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}},
			`.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"x"}: must be empty`},
		{"subject: no user", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: ra}},
			`.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified`},
		{"subject: neither, no user", &authorizationv1.SubjectAccessReview{},
			`.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "": at least one of user or group must be specified]`},
		{"subject: labels", &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: nra}},
			`.authorization.k8s.io "" is invalid: metadata: Invalid value: {"labels":{"a":"b"}}: must be empty`},
		{"local: namespace mismatch", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "b", Verb: "get", Resource: "pods"}}},
			`.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace`},
		{"local: non-resource", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: nra}},
			`.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"Path":"/healthz","Verb":"get"}: disallowed on this kind of request`},
		{"local: named", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "n"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "a"}}},
			`.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"n","namespace":"a"}: must be empty except for namespace`},
		{"selectors: both raw and requirements", &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: []metav1.FieldSelectorRequirement{{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}}}},
			LabelSelector: &authorizationv1.LabelSelectorAttributes{},
		}}},
			`.authorization.k8s.io "" is invalid: [spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "a=b": may not specified at the same time as requirements, spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required]`},
	}
	reg := Builtin()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := reg.Snapshot().ByGVK(tt.obj.GetObjectKind().GroupVersionKind())
			if k == nil {
				gvks, _, _ := Scheme.ObjectKinds(tt.obj)
				k = reg.Snapshot().ByGVK(gvks[0])
			}
			az := &fakeAuthorizer{decision: authorizer.DecisionAllow}
			_, err := k.Review(context.Background(), ReviewAccess{User: &user.DefaultInfo{Name: "alice"}, Authorizer: az}, tt.obj)
			st := statusOf(t, err)
			if st.Code != 422 || st.Reason != metav1.StatusReasonInvalid || st.Message != tt.want {
				t.Errorf("got %d %s %q\nwant 422 Invalid %q", st.Code, st.Reason, st.Message, tt.want)
			}
			if st.Details == nil || st.Details.Group != "authorization.k8s.io" || st.Details.Kind != "" || st.Details.Name != "" {
				t.Errorf("got details %+v", st.Details)
			}
			if az.got != nil {
				t.Errorf("the authorizer was asked about an invalid review")
			}
		})
	}
}

func TestReview_AccessReviewDecision(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	tests := []struct {
		name     string
		obj      runtime.Object
		az       *fakeAuthorizer
		want     authorizationv1.SubjectAccessReviewStatus
		wantUser string
		// wantAttrs are the attributes asked about, the user aside.
		wantAttrs authorizer.AttributesRecord
	}{
		{
			name: "self resource, allowed",
			obj: &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale", Name: "d"}}},
			az:        &fakeAuthorizer{decision: authorizer.DecisionAllow, reason: `RBAC: allowed by RoleBinding "b/ns" of Role "r" to User "alice"`},
			want:      authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by RoleBinding "b/ns" of Role "r" to User "alice"`},
			wantUser:  "alice",
			wantAttrs: authorizer.AttributesRecord{Namespace: "ns", Verb: "get", APIGroup: "apps", APIVersion: "*", Resource: "deployments", Subresource: "scale", Name: "d", ResourceRequest: true},
		},
		{
			name:      "self non-resource, no opinion",
			obj:       &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
			az:        &fakeAuthorizer{decision: authorizer.DecisionNoOpinion},
			want:      authorizationv1.SubjectAccessReviewStatus{},
			wantUser:  "alice",
			wantAttrs: authorizer.AttributesRecord{Path: "/metrics", Verb: "get"},
		},
		{
			name: "subject, denied with an error",
			obj: &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", Groups: []string{"g"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Version: "v1"}}},
			az:        &fakeAuthorizer{decision: authorizer.DecisionDeny, reason: "no", err: errors.New("webhook down")},
			want:      authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "no", EvaluationError: "webhook down"},
			wantUser:  "bob",
			wantAttrs: authorizer.AttributesRecord{Verb: "list", APIVersion: "v1", Resource: "secrets", ResourceRequest: true},
		},
		{
			name: "local",
			obj: &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Resource: "configmaps"}}},
			az:        &fakeAuthorizer{decision: authorizer.DecisionAllow},
			want:      authorizationv1.SubjectAccessReviewStatus{Allowed: true},
			wantUser:  "carol",
			wantAttrs: authorizer.AttributesRecord{Namespace: "ns", Verb: "create", APIVersion: "*", Resource: "configmaps", ResourceRequest: true},
		},
		{
			name: "selectors that do not parse",
			obj: &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods",
				FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
					{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}},
					{Key: "x", Operator: metav1.FieldSelectorOpExists},
				}},
				LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "a in ("},
			}}},
			az: &fakeAuthorizer{decision: authorizer.DecisionNoOpinion},
			want: authorizationv1.SubjectAccessReviewStatus{
				EvaluationError: "spec.resourceAttributes.fieldSelector partially ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"},
			wantUser: "alice",
		},
	}
	reg := Builtin()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvks, _, _ := Scheme.ObjectKinds(tt.obj)
			k := reg.Snapshot().ByGVK(gvks[0])
			out, err := k.Review(context.Background(), ReviewAccess{User: alice, Authorizer: tt.az}, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.obj {
				t.Errorf("the answer is not the object reviewed")
			}
			var got authorizationv1.SubjectAccessReviewStatus
			switch o := out.(type) {
			case *authorizationv1.SelfSubjectAccessReview:
				got = o.Status
			case *authorizationv1.SubjectAccessReview:
				got = o.Status
			case *authorizationv1.LocalSubjectAccessReview:
				got = o.Status
			}
			if got != tt.want {
				t.Errorf("got status %+v, want %+v", got, tt.want)
			}
			if u := tt.az.got.GetUser(); u == nil || u.GetName() != tt.wantUser {
				t.Errorf("asked about user %v, want %s", u, tt.wantUser)
			}
			if tt.wantAttrs.Verb == "" {
				return
			}
			gotAttrs := tt.az.got.(authorizer.AttributesRecord)
			gotAttrs.User = nil
			if !reflect.DeepEqual(gotAttrs, tt.wantAttrs) {
				t.Errorf("asked about %+v, want %+v", gotAttrs, tt.wantAttrs)
			}
		})
	}
}

func TestReview_SubjectAccessReviewUser(t *testing.T) {
	az := &fakeAuthorizer{decision: authorizer.DecisionAllow}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", UID: "42", Groups: []string{"a", "b"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"x", "y"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"},
	}}
	// The requesting user is not the one asked about.
	if _, err := subjectAccessReviewKind().Review(context.Background(), ReviewAccess{User: &user.DefaultInfo{Name: "admin"}, Authorizer: az}, sar); err != nil {
		t.Fatal(err)
	}
	u := az.got.GetUser()
	want := &user.DefaultInfo{Name: "bob", UID: "42", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x", "y"}}}
	if !reflect.DeepEqual(u, want) {
		t.Errorf("got user %#v, want %#v", u, want)
	}
}

// fakeRules returns its rules, incompleteness and error.
type fakeRules struct {
	resource    []authorizer.ResourceRuleInfo
	nonResource []authorizer.NonResourceRuleInfo
	incomplete  bool
	err         error
	namespace   string
}

func (f *fakeRules) RulesFor(_ context.Context, _ user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	f.namespace = namespace
	return f.resource, f.nonResource, f.incomplete, f.err
}

func TestReview_SelfSubjectRulesReview(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	tests := []struct {
		name  string
		rules authorizer.RuleResolver
		// want is the answer's JSON.
		want string
	}{
		{"no rules", &fakeRules{},
			`{"metadata":{},"spec":{},"status":{"resourceRules":[],"nonResourceRules":[],"incomplete":false}}`},
		{"rules and an error", &fakeRules{
			resource: []authorizer.ResourceRuleInfo{
				&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			},
			nonResource: []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
			err:         errors.New(`role.rbac.authorization.k8s.io "gone" not found`),
		}, `{"metadata":{},"spec":{},"status":{"resourceRules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"],"resourceNames":["a"]}],` +
			`"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}],"incomplete":false,"evaluationError":"role.rbac.authorization.k8s.io \"gone\" not found"}}`},
		{"incomplete", &fakeRules{incomplete: true},
			`{"metadata":{},"spec":{},"status":{"resourceRules":[],"nonResourceRules":[],"incomplete":true}}`},
		{"no resolver: everything", nil,
			`{"metadata":{},"spec":{},"status":{"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}],"incomplete":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &authorizationv1.SelfSubjectRulesReview{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"dropped": "yes"}}, Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}}
			out, err := selfSubjectRulesReviewKind().Review(context.Background(), ReviewAccess{User: alice, Rules: tt.rules}, in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			if f, ok := tt.rules.(*fakeRules); ok && f.namespace != "team" {
				t.Errorf("rules asked for namespace %q", f.namespace)
			}
		})
	}
	t.Run("no namespace", func(t *testing.T) {
		_, err := selfSubjectRulesReviewKind().Review(context.Background(), ReviewAccess{User: alice}, &authorizationv1.SelfSubjectRulesReview{})
		if st := statusOf(t, err); st.Code != 400 || st.Message != "no namespace on request" {
			t.Errorf("got %d %q", st.Code, st.Message)
		}
	})
}

func TestReview_NoUser(t *testing.T) {
	for _, tt := range []struct {
		k   *Kind
		obj runtime.Object
	}{
		{selfSubjectAccessReviewKind(), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/"}}}},
		{selfSubjectRulesReviewKind(), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "a"}}},
		{selfSubjectReviewKind(), &authenticationv1.SelfSubjectReview{}},
	} {
		t.Run(tt.k.GVK.Kind, func(t *testing.T) {
			_, err := tt.k.Review(context.Background(), ReviewAccess{}, tt.obj)
			if st := statusOf(t, err); st.Code != 400 || st.Message != "no user present on request" {
				t.Errorf("got %d %q", st.Code, st.Message)
			}
		})
	}
}

func TestReview_SelfSubjectReview(t *testing.T) {
	tests := []struct {
		name string
		u    user.Info
		want authenticationv1.UserInfo
	}{
		{"token user", &user.DefaultInfo{Name: "alice", UID: "7", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}},
			authenticationv1.UserInfo{Username: "alice", UID: "7", Groups: []string{"dev", "system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}},
		{"no uid, no extra", &user.DefaultInfo{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
			authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}, Extra: map[string]authenticationv1.ExtraValue{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &authenticationv1.SelfSubjectReview{ObjectMeta: metav1.ObjectMeta{Name: "ignored"}}
			out, err := selfSubjectReviewKind().Review(context.Background(), ReviewAccess{User: tt.u}, in)
			if err != nil {
				t.Fatal(err)
			}
			ssr := out.(*authenticationv1.SelfSubjectReview)
			if !reflect.DeepEqual(ssr.Status.UserInfo, tt.want) {
				t.Errorf("got %+v, want %+v", ssr.Status.UserInfo, tt.want)
			}
			if ssr.Name != "" || ssr.CreationTimestamp.IsZero() {
				t.Errorf("got metadata %+v, want only a creation time", ssr.ObjectMeta)
			}
		})
	}
}
