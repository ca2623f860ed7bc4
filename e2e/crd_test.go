package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// CustomResourceDefinitions are stored and validated as kube-apiserver
// does; the custom resources they define are not served (yet).

// cronTabCRDYAML is the CronTab CRD of the Kubernetes documentation, with a
// second version, a status subresource, printer columns and short names.
const cronTabCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
              image:
                type: string
              replicas:
                type: integer
                default: 1
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func (d *Daemon) apiextensionsClient(t *testing.T) apiextensionsclient.Interface {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(d.RESTConfig())
	if err != nil {
		t.Fatalf("new apiextensions clientset: %v", err)
	}
	return c
}

// TestCRD_Kubectl applies, lists, updates and deletes a CRD with kubectl.
func TestCRD_Kubectl(t *testing.T) {
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"

	wantOutput(t, d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/"+name+" created\n")

	res := d.MustKubectl("get", "crd")
	rows := table(res.Stdout)
	if len(rows) != 2 || !reflect.DeepEqual(rows[0], []string{"NAME", "CREATED", "AT"}) || len(rows[1]) != 2 || rows[1][0] != name {
		t.Fatalf("kubectl get crd:\n%s", res.Stdout)
	}
	if _, err := time.Parse(time.RFC3339, rows[1][1]); err != nil {
		t.Errorf("CREATED AT %q: %v", rows[1][1], err)
	}
	// Short name and category, as discovery advertises them.
	for _, args := range [][]string{{"get", "crds", name, "-o", "name"}, {"get", "api-extensions", "-o", "name"}} {
		wantOutput(t, d.MustKubectl(args...), "customresourcedefinition.apiextensions.k8s.io/"+name+"\n")
	}
	wantOutput(t, d.MustKubectl("get", "crd", name, "-o", "jsonpath={.metadata.generation} {.status.storedVersions} {.spec.conversion.strategy}"), `1 ["v1"] None`)

	// A changed spec bumps the generation; status is kept.
	changed := strings.Replace(cronTabCRDYAML, "shortNames: [ct]", "shortNames: [ct, cts]", 1)
	wantOutput(t, d.KubectlStdin(changed, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/"+name+" configured\n")
	wantOutput(t, d.MustKubectl("get", "crd", name, "-o", "jsonpath={.metadata.generation} {.spec.names.shortNames} {.status.storedVersions}"), `2 ["ct","cts"] ["v1"]`)

	// A schema that is not structural is refused with kube-apiserver's
	// message, and nothing changes.
	bad := strings.Replace(cronTabCRDYAML, "              image:\n                type: string\n", "              image: {}\n", 1)
	res = d.KubectlStdin(bad, "apply", "-f", "-")
	wantErr := `spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type: Required value: must not be empty for specified object fields`
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, wantErr) {
		t.Errorf("apply of a non-structural schema: %s", res)
	}
	wantOutput(t, d.MustKubectl("get", "crd", name, "-o", "jsonpath={.metadata.generation}"), "2")

	wantOutput(t, d.MustKubectl("delete", "crd", name), "customresourcedefinition.apiextensions.k8s.io \""+name+"\" deleted\n")
	res = d.Kubectl("get", "crd", name)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `customresourcedefinitions.apiextensions.k8s.io "`+name+`" not found`) {
		t.Errorf("get after delete: %s", res)
	}
}

// TestCRD_Clientset uses k8s.io/apiextensions-apiserver's typed clientset
// and the dynamic client: create, get, list, watch, status updates and a
// refused create.
func TestCRD_Clientset(t *testing.T) {
	d := StartDaemon(t)
	ctx := context.Background()
	crds := d.apiextensionsClient(t).ApiextensionsV1().CustomResourceDefinitions()

	in := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(cronTabCRDYAML), in); err != nil {
		t.Fatal(err)
	}
	in.Status.StoredVersions = []string{"v9"} // cleared on create
	created, err := crds.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Generation != 1 || !reflect.DeepEqual(created.Status.StoredVersions, []string{"v1"}) || created.Spec.Names.ListKind != "CronTabList" ||
		created.Spec.Conversion == nil || created.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("created: generation %d storedVersions %v listKind %q conversion %+v",
			created.Generation, created.Status.StoredVersions, created.Spec.Names.ListKind, created.Spec.Conversion)
	}
	// The default in the schema survives the round trip.
	if def := created.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"].Default; def == nil || string(def.Raw) != "1" {
		t.Errorf("replicas default %v", def)
	}

	// The CRD controllers write status until it is established; the
	// writes below come after theirs.
	waitCRD(t, d, created.Name, established)
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != created.Name {
		t.Fatalf("list: %v %+v", err, list)
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// The status subresource changes status only, and keeps the generation.
	got, err := crds.Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got.Status.AcceptedNames = got.Spec.Names
	got.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", LastTransitionTime: metav1.Now()}}
	got.Spec.Group = "ignored.example.com"
	updated, err := crds.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if updated.Spec.Group != "stable.example.com" || updated.Generation != 1 || updated.Status.AcceptedNames.Kind != "CronTab" || len(updated.Status.Conditions) != 1 {
		t.Errorf("after status update: group %q generation %d status %+v", updated.Spec.Group, updated.Generation, updated.Status)
	}
	select {
	case ev := <-w.ResultChan():
		crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if ev.Type != watch.Modified || !ok || crd.Status.AcceptedNames.Kind != "CronTab" || crd.ResourceVersion != updated.ResourceVersion {
			t.Errorf("watch event %s %T", ev.Type, ev.Object)
		}
	case <-time.After(requestTimeout):
		t.Fatal("no watch event for the status update")
	}

	// Once established, scope is immutable (kube-apiserver's rule).
	updated.Spec.Scope = apiextensionsv1.ClusterScoped
	_, err = crds.Update(ctx, updated, metav1.UpdateOptions{})
	wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CustomResourceDefinition.apiextensions.k8s.io "crontabs.stable.example.com" is invalid: spec.scope: Invalid value: "Cluster": field is immutable`)

	// The dynamic client sees the same object.
	u, err := d.Dynamic().Resource(crdGVR).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("dynamic get: %v", err)
	}
	if g, _, _ := unstructuredString(u.Object, "spec", "group"); g != "stable.example.com" || u.GetKind() != "CustomResourceDefinition" {
		t.Errorf("dynamic get: kind %q group %q", u.GetKind(), g)
	}

	t.Run("refused create stores nothing", func(t *testing.T) {
		bad := in.DeepCopy()
		bad.Name = "crontab.stable.example.com"
		bad.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["image"] = apiextensionsv1.JSONSchemaProps{}
		_, err := crds.Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("got %v, want 422 Invalid", err)
		}
		var gotCauses []string
		for _, c := range apiStatus(t, err).Details.Causes {
			gotCauses = append(gotCauses, string(c.Type)+" "+c.Field+": "+c.Message)
		}
		wantCauses := []string{
			`FieldValueInvalid metadata.name: Invalid value: "crontab.stable.example.com": must be spec.names.plural+"."+spec.group`,
			`FieldValueRequired spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type: Required value: must not be empty for specified object fields`,
		}
		if !reflect.DeepEqual(gotCauses, wantCauses) {
			t.Errorf("causes:\n got  %q\n want %q", gotCauses, wantCauses)
		}
		if _, err := crds.Get(ctx, bad.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get refused CRD: %v, want NotFound", err)
		}
	})

	t.Run("protobuf", func(t *testing.T) {
		cfg := d.RESTConfig()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
		pc, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pc.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("protobuf get: %v", err)
		}
		if got.Spec.Group != "stable.example.com" || got.Status.AcceptedNames.Kind != "CronTab" ||
			got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"].Type != "integer" {
			t.Errorf("protobuf get: %+v", got.Spec)
		}
		l, err := pc.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("protobuf list: %v %+v", err, l)
		}
	})

	if err := crds.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// TestCRD_ServerSideApply applies one CRD from two managers.
func TestCRD_ServerSideApply(t *testing.T) {
	d := StartDaemon(t)
	ctx := context.Background()
	crds := d.Dynamic().Resource(crdGVR)
	body, err := yaml.YAMLToJSON([]byte(cronTabCRDYAML))
	if err != nil {
		t.Fatal(err)
	}
	apply := func(manager string, body []byte, force bool) error {
		_, err := crds.Patch(ctx, "crontabs.stable.example.com", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	}
	if err := apply("alice", body, false); err != nil {
		t.Fatalf("alice applies: %v", err)
	}
	bob := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.stable.example.com","labels":{"team":"bob"}}}`)
	if err := apply("bob", bob, false); err != nil {
		t.Fatalf("bob applies a label: %v", err)
	}
	u, err := crds.Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, mf := range u.GetManagedFields() {
		if mf.Manager != "kube-apiserver" { // the CRD controllers' status writes
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
	}
	if want := []string{"alice/Apply", "bob/Apply"}; !reflect.DeepEqual(managers, want) || u.GetLabels()["team"] != "bob" || u.GetGeneration() != 1 {
		t.Errorf("managers %v labels %v generation %d", managers, u.GetLabels(), u.GetGeneration())
	}

	// bob takes alice's singular name: a conflict, unless forced. (Scope
	// would be refused: it is immutable once the CRD is established.)
	bobScope := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.stable.example.com"},"spec":{"names":{"singular":"crontabx","kind":"CronTab","plural":"crontabs"}}}`)
	err = apply("bob", bobScope, false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice": .spec.names.singular`) {
		t.Fatalf("bob applies singular: %v, want a conflict with alice on .spec.names.singular", err)
	}
	if err := apply("bob", bobScope, true); err != nil {
		t.Fatalf("bob forces singular: %v", err)
	}
	u, err = crds.Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructuredString(u.Object, "spec", "names", "singular"); s != "crontabx" || u.GetGeneration() != 2 {
		t.Errorf("after forced apply: singular %q generation %d", s, u.GetGeneration())
	}
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == "alice" && strings.Contains(string(mf.FieldsV1.Raw), `"f:singular"`) {
			t.Errorf("alice still owns spec.names.singular: %s", mf.FieldsV1.Raw)
		}
	}
}

// unstructuredString reads a string field of an unstructured object.
func unstructuredString(obj map[string]interface{}, path ...string) (string, bool, error) {
	var cur interface{} = obj
	for _, p := range path {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return "", false, nil
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// TestCRD_PatchAndDryRun patches a CRD with every patch type, through the
// main resource and the status subresource, and checks that dryRun
// answers as a write would but stores nothing.
func TestCRD_PatchAndDryRun(t *testing.T) {
	d := StartDaemon(t)
	ctx := context.Background()
	crds := d.apiextensionsClient(t).ApiextensionsV1().CustomResourceDefinitions()
	const name = "crontabs.stable.example.com"
	in := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(cronTabCRDYAML), in); err != nil {
		t.Fatal(err)
	}

	t.Run("dryRun create stores nothing", func(t *testing.T) {
		got, err := crds.Create(ctx, in, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		if got.Generation != 1 || !reflect.DeepEqual(got.Status.StoredVersions, []string{"v1"}) {
			t.Errorf("dry-run create answered generation %d storedVersions %v", got.Generation, got.Status.StoredVersions)
		}
		if _, err := crds.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after dry-run create: %v, want NotFound", err)
		}
		bad := in.DeepCopy()
		bad.Spec.Versions[1].Storage = true
		_, err = crds.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("dry-run create of two storage versions: %v, want 422", err)
		}
		var causes []string
		for _, c := range apiStatus(t, err).Details.Causes {
			// The value of spec.versions is the whole list, as JSON.
			causes = append(causes, c.Field+" "+c.Message[strings.LastIndex(c.Message, ": ")+2:])
		}
		if want := []string{"spec.versions must have exactly one version marked as storage version", "status.storedVersions must have the storage version v1beta1"}; !reflect.DeepEqual(causes, want) {
			t.Errorf("causes %q, want %q", causes, want)
		}
	})

	created, err := crds.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	patches := []struct {
		name  string
		typ   types.PatchType
		patch string
		check func(*apiextensionsv1.CustomResourceDefinition) bool
	}{
		{"merge", types.MergePatchType, `{"spec":{"names":{"shortNames":["ct","cron"]}}}`,
			func(c *apiextensionsv1.CustomResourceDefinition) bool {
				return reflect.DeepEqual(c.Spec.Names.ShortNames, []string{"ct", "cron"})
			}},
		{"json", types.JSONPatchType, `[{"op":"add","path":"/spec/names/categories","value":["all"]}]`,
			func(c *apiextensionsv1.CustomResourceDefinition) bool {
				return reflect.DeepEqual(c.Spec.Names.Categories, []string{"all"})
			}},
		{"strategic", types.StrategicMergePatchType, `{"metadata":{"labels":{"a":"b"}},"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
			func(c *apiextensionsv1.CustomResourceDefinition) bool {
				// The versions list has no merge key: replaced whole.
				return c.Labels["a"] == "b" && len(c.Spec.Versions) == 1 && c.Spec.Versions[0].Name == "v1"
			}},
	}
	generation := created.Generation
	for _, p := range patches {
		t.Run(p.name+" patch", func(t *testing.T) {
			dry, err := crds.Patch(ctx, name, p.typ, []byte(p.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil || !p.check(dry) {
				t.Fatalf("dry-run %s patch: %v %+v", p.name, err, dry)
			}
			if stored, err := crds.Get(ctx, name, metav1.GetOptions{}); err != nil || p.check(stored) || stored.Generation != generation {
				t.Errorf("dry-run %s patch was stored: %v", p.name, err)
			}
			got, err := crds.Patch(ctx, name, p.typ, []byte(p.patch), metav1.PatchOptions{})
			if err != nil || !p.check(got) {
				t.Fatalf("%s patch: %v %+v", p.name, err, got)
			}
			generation++
			if got.Generation != generation {
				t.Errorf("generation %d, want %d", got.Generation, generation)
			}
		})
	}

	t.Run("a patch that breaks validation is refused", func(t *testing.T) {
		_, err := crds.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"group":"other.example.com"}}`), metav1.PatchOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CustomResourceDefinition.apiextensions.k8s.io "`+name+`" is invalid: spec.group: Invalid value: "other.example.com": field is immutable`)
	})

	t.Run("status patch", func(t *testing.T) {
		patch := `{"spec":{"group":"ignored.example.com"},"status":{"acceptedNames":{"plural":"crontabs","kind":"CronTab"}}}`
		got, err := crds.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("status patch: %v", err)
		}
		if got.Spec.Group != "stable.example.com" || got.Status.AcceptedNames.Kind != "CronTab" || got.Generation != generation {
			t.Errorf("after status patch: group %q acceptedNames %+v generation %d", got.Spec.Group, got.Status.AcceptedNames, got.Generation)
		}
		_, err = crds.Patch(ctx, name, types.MergePatchType, []byte(`{"status":{"acceptedNames":{"kind":"CronTab","listKind":"CronTab"}}}`), metav1.PatchOptions{}, "status")
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `CustomResourceDefinition.apiextensions.k8s.io "`+name+`" is invalid: status.acceptedNames.listKind: Invalid value: "CronTab": kind and listKind may not be the same`)
	})

	t.Run("dryRun delete keeps the CRD", func(t *testing.T) {
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run delete: %v", err)
		}
		if _, err := crds.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("get after dry-run delete: %v", err)
		}
	})
}
