package httpapi

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// loadKindStates gives each kind with a LoadState hook (Services: the
// cluster IP and node port allocators) every stored object of the kind, so
// that its side state is derived from the store at each start.
func (s *Server) loadKindStates(ctx context.Context) error {
	for _, k := range s.cfg.Registry.Kinds() {
		if k.LoadState == nil {
			continue
		}
		res, err := s.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource})
		if err != nil {
			return fmt.Errorf("list %s: %w", k.Resource, err)
		}
		objs := make([]runtime.Object, 0, len(res.Objects))
		for _, o := range res.Objects {
			obj, err := k.DecodeStored(o.Value)
			if err != nil {
				return fmt.Errorf("decode %s %s/%s: %w", k.Resource, o.Key.Namespace, o.Key.Name, err)
			}
			objs = append(objs, obj)
		}
		if err := k.LoadState(objs); err != nil {
			return fmt.Errorf("load %s state: %w", k.Resource, err)
		}
	}
	return nil
}

// ensureKubernetesService creates the configured default/kubernetes
// Service when it is missing, through the ordinary create steps (so its
// cluster IP is allocated like any requested one). An existing one is left
// as it is.
func (s *Server) ensureKubernetesService(ctx context.Context) error {
	want := s.cfg.KubernetesService
	if want == nil {
		return nil
	}
	k := s.cfg.Registry.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	if k == nil {
		return nil
	}
	if _, err := s.cfg.Store.Get(ctx, s.key(k, want.Namespace, want.Name)); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read service %s/%s: %w", want.Namespace, want.Name, err)
	}
	svc := want.DeepCopy()
	svc.TypeMeta.Kind, svc.TypeMeta.APIVersion = "Service", "v1"
	registry.Scheme.Default(svc)
	r := &request{kind: k, ri: requestInfo{Namespace: svc.Namespace}}
	if _, _, err := s.createObject(ctx, r, svc, "kube-apiserver", false); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}
