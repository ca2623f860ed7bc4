package registry

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestBuiltin(t *testing.T) {
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	tests := []struct {
		gvr             string
		kind            string
		singular        string
		namespaced      bool
		shortNames      []string
		verbs           []string
		status          bool
		storageResource string
		storageGVK      schema.GroupVersionKind
		unconditional   bool
		createOnUpdate  bool
	}{
		{"/v1/configmaps", "ConfigMap", "configmap", true, []string{"cm"}, all, false, "configmaps", corev1.SchemeGroupVersion.WithKind("ConfigMap"), true, false},
		{"/v1/secrets", "Secret", "secret", true, nil, all, false, "secrets", corev1.SchemeGroupVersion.WithKind("Secret"), true, false},
		{"/v1/serviceaccounts", "ServiceAccount", "serviceaccount", true, []string{"sa"}, all, false, "serviceaccounts", corev1.SchemeGroupVersion.WithKind("ServiceAccount"), true, false},
		{"/v1/services", "Service", "service", true, []string{"svc"}, all, true, "services", corev1.SchemeGroupVersion.WithKind("Service"), true, false},
		{"/v1/namespaces", "Namespace", "namespace", false, []string{"ns"}, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, true, "namespaces", corev1.SchemeGroupVersion.WithKind("Namespace"), true, false},
		{"/v1/events", "Event", "event", true, []string{"ev"}, all, false, "events", corev1.SchemeGroupVersion.WithKind("Event"), true, true},
		{"events.k8s.io/v1/events", "Event", "event", true, []string{"ev"}, all, false, "events", corev1.SchemeGroupVersion.WithKind("Event"), true, true},
		{"coordination.k8s.io/v1/leases", "Lease", "lease", true, nil, all, false, "leases.coordination.k8s.io", coordinationv1.SchemeGroupVersion.WithKind("Lease"), false, true},
		{"apiextensions.k8s.io/v1/customresourcedefinitions", "CustomResourceDefinition", "customresourcedefinition", false, []string{"crd", "crds"}, all, true,
			"customresourcedefinitions.apiextensions.k8s.io", apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), false, false},
		// kube-apiserver serves the RBAC kinds without short names, and
		// PUT creates them.
		{"rbac.authorization.k8s.io/v1/roles", "Role", "role", true, nil, all, false, "roles.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithKind("Role"), true, true},
		{"rbac.authorization.k8s.io/v1/clusterroles", "ClusterRole", "clusterrole", false, nil, all, false, "clusterroles.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), true, true},
		{"rbac.authorization.k8s.io/v1/rolebindings", "RoleBinding", "rolebinding", true, nil, all, false, "rolebindings.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), true, true},
		{"rbac.authorization.k8s.io/v1/clusterrolebindings", "ClusterRoleBinding", "clusterrolebinding", false, nil, all, false, "clusterrolebindings.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), true, true},
	}
	reg := Builtin()
	stored := 0
	for _, k := range reg.Kinds() {
		if k.Stored() {
			stored++
		}
	}
	if stored != len(tests) {
		t.Errorf("got %d stored kinds, want %d", stored, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.gvr, func(t *testing.T) {
			k := reg.Lookup(parseGVR(t, tt.gvr))
			if k.GVK.Kind != tt.kind || k.ListKind != tt.kind+"List" || k.Singular != tt.singular || k.Namespaced != tt.namespaced {
				t.Errorf("got kind %s list %s singular %s namespaced %v", k.GVK.Kind, k.ListKind, k.Singular, k.Namespaced)
			}
			// As in kube-apiserver, Services are in the "all" category and
			// CRDs in "api-extensions"; no other built-in has a category.
			var wantCategories []string
			switch tt.kind {
			case "Service":
				wantCategories = []string{"all"}
			case "CustomResourceDefinition":
				wantCategories = []string{"api-extensions"}
			}
			if !reflect.DeepEqual(k.ShortNames, tt.shortNames) || !reflect.DeepEqual(k.Verbs, tt.verbs) || !reflect.DeepEqual(k.Categories, wantCategories) {
				t.Errorf("got shortNames %v verbs %v categories %v", k.ShortNames, k.Verbs, k.Categories)
			}
			if k.StatusSubresource != tt.status || k.StorageResource != tt.storageResource || k.StorageGVK != tt.storageGVK {
				t.Errorf("got status %v storage %s %s", k.StatusSubresource, k.StorageResource, k.StorageGVK)
			}
			if k.Strategy.AllowUnconditionalUpdate() != tt.unconditional || k.AllowCreateOnUpdate != tt.createOnUpdate {
				t.Errorf("got unconditional %v createOnUpdate %v", k.Strategy.AllowUnconditionalUpdate(), k.AllowCreateOnUpdate)
			}
			if (k.GVK != k.StorageGVK) != (k.ToStorage != nil) || (k.ToStorage != nil) != (k.FromStorage != nil) {
				t.Errorf("conversions do not match the storage version")
			}
			if _, ok := k.Strategy.(StatusStrategy); ok != k.StatusSubresource {
				t.Errorf("StatusStrategy implemented: %v", ok)
			}
			if _, ok := k.Strategy.(FinalizeStrategy); ok != k.FinalizeSubresource {
				t.Errorf("FinalizeStrategy implemented: %v", ok)
			}
			obj := k.New()
			if len(k.FieldSet(obj)) != len(k.FieldSelectorKeys) {
				t.Errorf("field set %v, keys %v", k.FieldSet(obj), k.FieldSelectorKeys)
			}
			row, err := k.TableRow(obj)
			if err != nil || len(row) != len(k.TableColumns) {
				t.Errorf("table row %v (%v) for %d columns", row, err, len(k.TableColumns))
			}
		})
	}
}

func TestStrategy_NameValidator(t *testing.T) {
	reg := Builtin()
	tests := []struct {
		gvr     string
		name    string
		prefix  bool
		wantErr bool
	}{
		{"/v1/configmaps", "a.b-c", false, false},
		{"/v1/configmaps", "gen-", true, false},
		{"/v1/configmaps", "Bad_", true, true},
		{"/v1/namespaces", "a.b", false, true},
		{"/v1/namespaces", "ab", false, false},
		{"/v1/events", "Pod_Name.17a", false, false},
		{"/v1/events", "..", false, true},
		{"/v1/events", ".", false, true},
		{"/v1/events", "a/b", false, true},
		{"/v1/events", "a%b", false, true},
		{"/v1/events", "..", true, false},
		{"events.k8s.io/v1/events", "Pod_Name", false, true},
		{"coordination.k8s.io/v1/leases", "kube-controller-manager", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.gvr+" "+tt.name, func(t *testing.T) {
			msgs := reg.Lookup(parseGVR(t, tt.gvr)).Strategy.NameValidator()(tt.name, tt.prefix)
			if (len(msgs) > 0) != tt.wantErr {
				t.Errorf("got %q, want error %v", msgs, tt.wantErr)
			}
		})
	}
}

// goldenTable is a Table as recorded in testdata/tables.json.
type goldenTable struct {
	ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	Rows              [][]interface{}                `json:"rows"`
}

func loadGoldenTables(t *testing.T) map[string]goldenTable {
	t.Helper()
	b, err := os.ReadFile("testdata/tables.json")
	if err != nil {
		t.Fatal(err)
	}
	var tables map[string]goldenTable
	if err := json.Unmarshal(b, &tables); err != nil {
		t.Fatal(err)
	}
	return tables
}

// rowJSON renders cells as a Table row is sent, with Age cells replaced as
// apidiff normalizes them.
func rowJSON(t *testing.T, cols []metav1.TableColumnDefinition, cells []interface{}) []interface{} {
	t.Helper()
	cells = append([]interface{}(nil), cells...)
	for i, c := range cols {
		if c.Name == "Age" {
			cells[i] = "<age>"
		}
	}
	b, err := json.Marshal(cells)
	if err != nil {
		t.Fatal(err)
	}
	var out []interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKind_TableColumns(t *testing.T) {
	tables := loadGoldenTables(t)
	reg := Builtin()
	created := metav1.NewTime(time.Now().Add(-3 * time.Minute))

	t.Run("secrets (s28 table)", func(t *testing.T) {
		k := reg.Lookup(parseGVR(t, "/v1/secrets"))
		want := tables["secrets"]
		if !reflect.DeepEqual(k.TableColumns, want.ColumnDefinitions) {
			t.Errorf("columns:\n got  %+v\n want %+v", k.TableColumns, want.ColumnDefinitions)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1", CreationTimestamp: created}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"pass": []byte("new"), "user": []byte("admin")}}
		cells, err := k.TableRow(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowJSON(t, k.TableColumns, cells); !reflect.DeepEqual(got, want.Rows[0]) {
			t.Errorf("row: got %v, want %v", got, want.Rows[0])
		}
		if cells[3] != "3m" {
			t.Errorf("age: got %v, want 3m", cells[3])
		}
	})

	t.Run("leases (s29 table)", func(t *testing.T) {
		k := reg.Lookup(parseGVR(t, "coordination.k8s.io/v1/leases"))
		want := tables["leases"]
		if !reflect.DeepEqual(k.TableColumns, want.ColumnDefinitions) {
			t.Errorf("columns:\n got  %+v\n want %+v", k.TableColumns, want.ColumnDefinitions)
		}
		leases := []*coordinationv1.Lease{
			{ObjectMeta: metav1.ObjectMeta{Name: "applied", CreationTimestamp: created}, Spec: coordinationv1.LeaseSpec{HolderIdentity: strPtr("x")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "empty", CreationTimestamp: created}},
			{ObjectMeta: metav1.ObjectMeta{Name: "leader", CreationTimestamp: created}, Spec: coordinationv1.LeaseSpec{HolderIdentity: strPtr("node-b")}},
		}
		for i, l := range leases {
			cells, err := k.TableRow(l)
			if err != nil {
				t.Fatal(err)
			}
			if got := rowJSON(t, k.TableColumns, cells); !reflect.DeepEqual(got, want.Rows[i]) {
				t.Errorf("row %d: got %v, want %v", i, got, want.Rows[i])
			}
		}
	})

	t.Run("configmaps and namespaces", func(t *testing.T) {
		tests := []struct {
			gvr   string
			obj   runtime.Object
			names []string
			cells []interface{}
		}{
			{"/v1/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": nil}},
				[]string{"Name", "Data", "Age"}, []interface{}{"c", int64(2), "<unknown>"}},
			{"/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
				[]string{"Name", "Status", "Age"}, []interface{}{"n", "Terminating", "<unknown>"}},
		}
		for _, tt := range tests {
			k := reg.Lookup(parseGVR(t, tt.gvr))
			var names []string
			for _, c := range k.TableColumns {
				names = append(names, c.Name)
				if c.Description == "" {
					t.Errorf("%s column %s has no description", tt.gvr, c.Name)
				}
			}
			if !reflect.DeepEqual(names, tt.names) {
				t.Errorf("%s columns %v, want %v", tt.gvr, names, tt.names)
			}
			cells, err := k.TableRow(tt.obj)
			if err != nil || !reflect.DeepEqual(cells, tt.cells) {
				t.Errorf("%s row %#v (%v), want %#v", tt.gvr, cells, err, tt.cells)
			}
		}
	})
}
