package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var secretGK = corev1.SchemeGroupVersion.WithKind("Secret").GroupKind()

func storedSecret(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns1", UID: "3f0c1d9e-5b7a-4c8e-9d2f-6a4b8c0e1f23",
			ResourceVersion: "7", CreationTimestamp: metav1.Unix(1700000000, 0),
		},
		Type: typ,
		Data: data,
	}
}

func TestSecretStrategy_PrepareForCreate(t *testing.T) {
	// s28 create-stringdata: stringData wins over data, is merged into it
	// and is never kept; the type defaults to Opaque.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: "ns1"},
		StringData: map[string]string{"user": "admin", "pass": "p@ss"},
		Data:       map[string][]byte{"user": []byte("overridden")},
	}
	secretStrategy{}.PrepareForCreate(s)
	want := map[string][]byte{"user": []byte("admin"), "pass": []byte("p@ss")}
	if !reflect.DeepEqual(s.Data, want) {
		t.Errorf("data: got %q, want %q", s.Data, want)
	}
	if s.StringData != nil {
		t.Errorf("stringData: got %v, want nil", s.StringData)
	}
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("type: got %q, want Opaque", s.Type)
	}
	assertNoErrors(t, secretStrategy{}.Validate(s))
}

func TestSecretKind_NormalizeOnDecode(t *testing.T) {
	s := &corev1.Secret{StringData: map[string]string{"pass": "p"}, Data: map[string][]byte{"pass": []byte("old"), "user": []byte("u")}}
	secretKind().NormalizeOnDecode(s)
	want := map[string][]byte{"pass": []byte("p"), "user": []byte("u")}
	if !reflect.DeepEqual(s.Data, want) || s.StringData != nil {
		t.Errorf("got data %q stringData %v, want %q and nil", s.Data, s.StringData, want)
	}
}

func TestSecretStrategy_PrepareForUpdate(t *testing.T) {
	// s28 patch-stringdata: a patch that sets stringData changes data.
	old := storedSecret("s1", corev1.SecretTypeOpaque, map[string][]byte{"user": []byte("admin"), "pass": []byte("p@ss")})
	s := old.DeepCopy()
	s.StringData = map[string]string{"pass": "new"}
	secretStrategy{}.PrepareForUpdate(s, old)
	want := map[string][]byte{"user": []byte("admin"), "pass": []byte("new")}
	if !reflect.DeepEqual(s.Data, want) || s.StringData != nil {
		t.Errorf("got data %q stringData %v, want %q and nil", s.Data, s.StringData, want)
	}
	assertNoErrors(t, secretStrategy{}.ValidateUpdate(s, old))
}

func TestSecretStrategy_Validate(t *testing.T) {
	tests := []struct {
		golden string
		secret *corev1.Secret
	}{
		{"s28-secrets/bad-key", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "ns1"},
			Data:       map[string][]byte{"bad key": []byte("a")},
		}},
		{"s28-secrets/type-tls-missing-keys", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s4", Namespace: "ns1"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": []byte("a")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := secretStrategy{}
			s.PrepareForCreate(tt.secret)
			assertInvalid(t, tt.golden, secretGK, tt.secret.Name, s.Validate(tt.secret), nil)
		})
	}

	typed := []struct {
		name string
		typ  corev1.SecretType
		data map[string][]byte
		want []string // "field: detail" of each error
	}{
		{"basic-auth with only a username (s28 type-basic-auth)", corev1.SecretTypeBasicAuth, map[string][]byte{"username": []byte("u")}, nil},
		{"basic-auth without keys", corev1.SecretTypeBasicAuth, nil, []string{"data[username]: Required value", "data[password]: Required value"}},
		{"custom type (s28 custom-type)", "example.com/custom", map[string][]byte{"x": []byte("x")}, nil},
		{"bootstrap token is not checked", corev1.SecretTypeBootstrapToken, nil, nil},
		{"ssh-auth", corev1.SecretTypeSSHAuth, nil, []string{"data[ssh-privatekey]: Required value"}},
		{"dockercfg missing", corev1.SecretTypeDockercfg, nil, []string{"data[.dockercfg]: Required value"}},
		{"dockercfg not json", corev1.SecretTypeDockercfg, map[string][]byte{".dockercfg": []byte("{")},
			[]string{`data[.dockercfg]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`}},
		{"dockerconfigjson", corev1.SecretTypeDockerConfigJson, map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}, nil},
		{"tls without keys", corev1.SecretTypeTLS, nil, []string{"data[tls.crt]: Required value", "data[tls.key]: Required value"}},
		{"service-account-token", corev1.SecretTypeServiceAccountToken, nil,
			[]string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
	}
	for _, tt := range typed {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns1"}, Type: tt.typ, Data: tt.data}
			var got []string
			for _, e := range (secretStrategy{}).Validate(s) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretStrategy_ValidateUpdate(t *testing.T) {
	immutable := storedSecret("s7", corev1.SecretTypeOpaque, map[string][]byte{"x": []byte("x")})
	immutable.Immutable = boolPtr(true)
	tests := []struct {
		golden string
		old    *corev1.Secret
		mutate func(s *corev1.Secret)
	}{
		// The 422 also lists the new type's required keys.
		{"s28-secrets/change-type", storedSecret("s1", corev1.SecretTypeOpaque, map[string][]byte{"pass": []byte("new"), "user": []byte("admin")}),
			func(s *corev1.Secret) { s.Type = corev1.SecretTypeBasicAuth }},
		{"s28-secrets/immutable-change", immutable, func(s *corev1.Secret) { s.Data["x"] = []byte("y") }},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := tt.old.DeepCopy()
			tt.mutate(s)
			st := secretStrategy{}
			st.PrepareForUpdate(s, tt.old)
			assertInvalid(t, tt.golden, secretGK, s.Name, updateErrs(s, tt.old, true, st.ValidateUpdate(s, tt.old)), nil)
		})
	}

	t.Run("stringData with the same value on an immutable secret", func(t *testing.T) {
		s := immutable.DeepCopy()
		s.StringData = map[string]string{"x": "x"}
		st := secretStrategy{}
		st.PrepareForUpdate(s, immutable)
		assertNoErrors(t, st.ValidateUpdate(s, immutable))
	})
}

func TestScheme_Default(t *testing.T) {
	t.Run("secret type", func(t *testing.T) {
		s := &corev1.Secret{}
		Scheme.Default(s)
		if s.Type != corev1.SecretTypeOpaque {
			t.Errorf("got type %q, want Opaque", s.Type)
		}
	})
	t.Run("namespace label and phase", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{corev1.LabelMetadataName: "other"}}}
		Scheme.Default(ns)
		if got := ns.Labels[corev1.LabelMetadataName]; got != "a" {
			t.Errorf("got label %q, want a", got)
		}
		if ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("got phase %q, want Active", ns.Status.Phase)
		}
	})
	t.Run("types are registered", func(t *testing.T) {
		for _, k := range Builtin().Kinds() {
			objs := []struct {
				name string
				obj  runtime.Object
			}{{"New", k.New()}}
			if k.Stored() {
				objs = append(objs, struct {
					name string
					obj  runtime.Object
				}{"NewList", k.NewList()})
			}
			for _, gvk := range objs {
				kinds, _, err := Scheme.ObjectKinds(gvk.obj)
				if err != nil {
					t.Errorf("%s %s: %v", k.GVK, gvk.name, err)
					continue
				}
				found := false
				for _, got := range kinds {
					if got.GroupVersion() == k.GVK.GroupVersion() {
						found = true
					}
				}
				if !found {
					t.Errorf("%s %s registered as %v", k.GVK, gvk.name, kinds)
				}
			}
			if _, err := Scheme.New(k.StorageGVK); k.Stored() && err != nil {
				t.Errorf("storage %s: %v", k.StorageGVK, err)
			}
		}
		for _, gvk := range []string{"Table", "PartialObjectMetadata", "PartialObjectMetadataList"} {
			if !Scheme.Recognizes(metav1.SchemeGroupVersion.WithKind(gvk)) {
				t.Errorf("meta.k8s.io/v1 %s not registered", gvk)
			}
		}
	})
}
