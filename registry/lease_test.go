package registry

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var leaseGK = coordinationv1.SchemeGroupVersion.WithKind("Lease").GroupKind()

func int32Ptr(i int32) *int32 { return &i }
func strPtr(s string) *string { return &s }

func TestLeaseStrategy_Validate(t *testing.T) {
	tests := []struct {
		golden string
		lease  *coordinationv1.Lease
	}{
		{"s29-leases/negative-duration", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "neg", Namespace: "ns1"}, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: int32Ptr(-1)}}},
		{"s29-leases/zero-duration", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "zero", Namespace: "ns1"}, Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: int32Ptr(0)}}},
		{"s29-leases/negative-transitions", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "negt", Namespace: "ns1"}, Spec: coordinationv1.LeaseSpec{LeaseTransitions: int32Ptr(-1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := leaseStrategy{}
			s.PrepareForCreate(tt.lease)
			assertInvalid(t, tt.golden, leaseGK, tt.lease.Name, s.Validate(tt.lease), nil)
		})
	}

	t.Run("unqualified finalizers are fine for leases", func(t *testing.T) {
		// Leases use apimachinery's object-meta validation, without the
		// core group's standard-finalizer rule.
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns1", Finalizers: []string{"simple"}}}
		assertNoErrors(t, leaseStrategy{}.Validate(l))
	})
}

func TestLeaseStrategy_PrepareForCreate(t *testing.T) {
	// s29 strategy-without-preferred: the feature-gated fields are dropped.
	strategy := coordinationv1.OldestEmulationVersion
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "strat", Namespace: "ns1"},
		Spec:       coordinationv1.LeaseSpec{Strategy: &strategy, PreferredHolder: strPtr("x")},
	}
	s := leaseStrategy{}
	s.PrepareForCreate(l)
	if l.Spec.Strategy != nil || l.Spec.PreferredHolder != nil {
		t.Errorf("got spec %+v, want strategy and preferredHolder dropped", l.Spec)
	}
	assertNoErrors(t, s.Validate(l))

	t.Run("with the feature gate on they are validated", func(t *testing.T) {
		defer func(v bool) { CoordinatedLeaderElection = v }(CoordinatedLeaderElection)
		CoordinatedLeaderElection = true
		bad := coordinationv1.CoordinatedLeaseStrategy("Newest")
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "strat", Namespace: "ns1"},
			Spec:       coordinationv1.LeaseSpec{Strategy: &bad},
		}
		s.PrepareForCreate(l)
		errs := s.Validate(l)
		want := `spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"`
		if len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("got %v, want %s", errs, want)
		}
		l.Spec.Strategy = nil
		l.Spec.PreferredHolder = strPtr("x")
		errs = s.Validate(l)
		want = "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
		if len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("got %v, want %s", errs, want)
		}
	})
}

func TestLeaseStrategy_ValidateUpdate(t *testing.T) {
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "ns1", UID: "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", ResourceVersion: "2", CreationTimestamp: metav1.Unix(1700000000, 0)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: strPtr("node-a"), LeaseDurationSeconds: int32Ptr(15), LeaseTransitions: int32Ptr(0)},
	}
	l := old.DeepCopy()
	l.Spec.HolderIdentity = strPtr("node-b")
	l.Spec.LeaseTransitions = int32Ptr(1)
	strategy := coordinationv1.OldestEmulationVersion
	l.Spec.Strategy = &strategy
	s := leaseStrategy{}
	s.PrepareForUpdate(l, old)
	if l.Spec.Strategy != nil {
		t.Errorf("update kept the feature-gated strategy")
	}
	assertNoErrors(t, s.ValidateUpdate(l, old))
	if s.AllowUnconditionalUpdate() {
		t.Errorf("leases need a resourceVersion on PUT in kube-apiserver")
	}

	l.Spec.LeaseDurationSeconds = int32Ptr(0)
	errs := s.ValidateUpdate(l, old)
	if want := "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"; len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %s", errs, want)
	}
}
