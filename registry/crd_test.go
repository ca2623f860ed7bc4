package registry

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kubevalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry/internal/crdvalidation"
)

// cronTabYAML is the CRD of the Kubernetes documentation's CronTab example,
// with a second version, a status subresource and printer columns.
const cronTabYAML = `
apiVersion: apiextensions.k8s.io/v1
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

// newCronTabCRD returns the CronTab CRD as a create request would have it:
// decoded, defaulted, prepared.
func newCronTabCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(cronTabYAML), crd); err != nil {
		t.Fatal(err)
	}
	Scheme.Default(crd)
	crdStrategy{}.PrepareForCreate(crd)
	return crd
}

// schemaOf parses a JSONSchemaProps from YAML.
func schemaOf(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// causes renders errs as "<type> <field>: <detail>", the parts of a cause
// that clients compare.
func causes(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Field, e.Detail))
	}
	return out
}

// crdCase is one create-validation case: a change to the CronTab CRD and
// the causes kube-apiserver reports for it.
type crdCase struct {
	name   string
	mutate func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition)
	want   []string
}

// setSchema gives version i the schema y.
func setSchema(i int, y string) func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {
	return func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schemaOf(t, y)}
	}
}

func crdCreateCases() []crdCase {
	return []crdCase{
		{name: "valid", mutate: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {}},
		{name: "name is not plural.group", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name = "crontab.stable.example.com"
		}, want: []string{"Invalid value metadata.name: must be spec.names.plural+\".\"+spec.group"}},
		{name: "group without a dot", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.example", "example"
		}, want: []string{"Invalid value spec.group: should be a domain with at least one dot"}},
		{name: "group missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Group = ""
		}, want: []string{"Invalid value metadata.name: must be spec.names.plural+\".\"+spec.group", "Required value spec.group: "}},
		{name: "group not a DNS subdomain", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.stable_x.example.com", "stable_x.example.com"
		}, want: []string{"Invalid value metadata.name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')", "Invalid value spec.group: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "scope missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = ""
		}, want: []string{"Required value spec.scope: "}},
		{name: "scope unknown", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = "Global"
		}, want: []string{"Unsupported value spec.scope: supported values: \"Cluster\", \"Namespaced\""}},
		{name: "plural missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Names.Plural = ".stable.example.com", ""
		}, want: []string{"Invalid value metadata.name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')", "Required value spec.names.plural: "}},
		{name: "singular, kind, listKind invalid", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Singular, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "Cron_tab", "Cron_Tab", "Cron_TabList"
		}, want: []string{"Invalid value spec.names.singular: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')", "Invalid value spec.names.kind: may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')", "Invalid value spec.names.listKind: may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"}},
		{name: "kind equals listKind", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.ListKind = "CronTab"
		}, want: []string{"Invalid value spec.names.listKind: kind and listKind may not be the same"}},
		{name: "kind missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "", ""
		}, want: []string{"Required value spec.names.kind: ", "Required value spec.names.listKind: "}},
		{name: "shortNames and categories invalid", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.ShortNames = []string{"ct", "C T"}
			crd.Spec.Names.Categories = []string{"all", "Bad"}
		}, want: []string{"Invalid value spec.names.shortNames[1]: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')", "Invalid value spec.names.categories[1]: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"}},
		{name: "no versions", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions = nil
			crd.Status.StoredVersions = nil
		}, want: []string{"Invalid value spec.versions: must have exactly one version marked as storage version", "Invalid value status.storedVersions: must have at least one stored version"}},
		{name: "two storage versions", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Storage = true
		}, want: []string{"Invalid value spec.versions: must have exactly one version marked as storage version", "Invalid value status.storedVersions: must have the storage version v1beta1"}},
		{name: "duplicate and invalid version names", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions = append(crd.Spec.Versions, *crd.Spec.Versions[1].DeepCopy(), *crd.Spec.Versions[1].DeepCopy())
			crd.Spec.Versions[3].Name = "V_2"
		}, want: []string{"Invalid value spec.versions[3].name: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')", "Invalid value spec.versions: must contain unique version names"}},
		{name: "deprecationWarning without deprecated", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].DeprecationWarning = ptr.To("old")
		}, want: []string{"Invalid value spec.versions[1].deprecationWarning: can only be set for deprecated versions"}},
		{name: "schema missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Schema = nil
		}, want: []string{"Required value spec.versions[1].schema.openAPIV3Schema: "}},
		{name: "identical schemas are reported under spec.validation", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			s := `{type: object, properties: {spec: {type: object, properties: {a: {}}}}}`
			setSchema(0, s)(t, crd)
			setSchema(1, s)(t, crd)
		}, want: []string{"Required value spec.validation.openAPIV3Schema.properties[spec].properties[a].type: must not be empty for specified object fields"}},
		{name: "type missing in a property", mutate: setSchema(1, `{type: object, properties: {spec: {properties: {a: {type: string}}}}}`), want: []string{"Required value spec.versions[1].schema.openAPIV3Schema.properties[spec].type: must not be empty for specified object fields"}},
		{name: "root type not object with status", mutate: setSchema(0, `{type: array, items: {type: string}}`), want: []string{"Invalid value spec.versions[0].schema.openAPIV3Schema.type: only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled", "Invalid value spec.versions[0].schema.openAPIV3Schema.type: must be object at the root"}},
		{name: "forbidden fields at the root with status", mutate: setSchema(0, `{type: object, additionalProperties: {type: string}}`), want: []string{"Invalid value spec.versions[0].schema.openAPIV3Schema: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled", "Forbidden spec.versions[0].schema.openAPIV3Schema.additionalProperties: must not be used at the root"}},
		{name: "nullable root", mutate: setSchema(1, `{type: object, nullable: true}`), want: []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.nullable: nullable cannot be true at the root"}},
		{name: "unsupported keywords", mutate: setSchema(1, `{type: object, properties: {a: {type: array, uniqueItems: true, items: {type: string}}, b: {type: "null"}, c: {type: string, id: x}, d: {$ref: "#/x"}}}`), want: []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.properties[a].uniqueItems: uniqueItems cannot be set to true since the runtime complexity becomes quadratic", "Unsupported value spec.versions[1].schema.openAPIV3Schema.properties[b].type: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"", "Forbidden spec.versions[1].schema.openAPIV3Schema.properties[b].type: type cannot be set to null, use nullable as an alternative", "Forbidden spec.versions[1].schema.openAPIV3Schema.properties[c].id: id is not supported", "Forbidden spec.versions[1].schema.openAPIV3Schema.properties[d].$ref: $ref is not supported"}},
		{name: "invalid property type", mutate: setSchema(1, `{type: object, properties: {a: {type: int}}}`), want: []string{"Unsupported value spec.versions[1].schema.openAPIV3Schema.properties[a].type: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""}},
		{name: "properties and additionalProperties", mutate: setSchema(1, `{type: object, properties: {a: {type: object, properties: {b: {type: string}}, additionalProperties: {type: string}}}}`), want: []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.properties[a].additionalProperties: additionalProperties and properties are mutual exclusive"}},
		{name: "preserve-unknown-fields false", mutate: setSchema(1, `{type: object, x-kubernetes-preserve-unknown-fields: false}`), want: []string{"Invalid value spec.versions[1].schema.openAPIV3Schema.x-kubernetes-preserve-unknown-fields: must be true or undefined"}},
		{name: "int-or-string", mutate: setSchema(1, `{type: object, properties: {a: {x-kubernetes-int-or-string: true}, b: {type: string, x-kubernetes-int-or-string: true}}}`)},
		{name: "embedded resource without object type", mutate: setSchema(1, `{type: object, properties: {a: {type: string, x-kubernetes-embedded-resource: true}, b: {type: object, x-kubernetes-embedded-resource: true}}}`), want: []string{"Required value spec.versions[1].schema.openAPIV3Schema.properties[a].properties: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields", "Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].type: must be object if x-kubernetes-embedded-resource is true", "Required value spec.versions[1].schema.openAPIV3Schema.properties[b].properties: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"}},
		{name: "metadata restrictions", mutate: setSchema(1, `{type: object, properties: {metadata: {type: object, properties: {name: {type: string}, labels: {type: object}}}}}`), want: []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.properties[metadata]: must not specify anything other than name and generateName, but metadata is implicitly specified"}},
		{name: "list-type and map-keys", mutate: setSchema(1, `{type: object, properties: {
  a: {type: string, x-kubernetes-list-type: set},
  b: {type: array, x-kubernetes-list-type: map, items: {type: object, properties: {k: {type: string}}}},
  c: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}},
  d: {type: array, x-kubernetes-list-type: bag, items: {type: string}},
  e: {type: array, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}},
  f: {type: array, x-kubernetes-list-type: set, items: {type: object, properties: {k: {type: string}}}},
  g: {type: object, x-kubernetes-map-type: loose}}}`), want: []string{"Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].type: must be array if x-kubernetes-list-type is specified", "Required value spec.versions[1].schema.openAPIV3Schema.properties[b].x-kubernetes-list-map-keys: must not be empty if x-kubernetes-list-type is map", "Required value spec.versions[1].schema.openAPIV3Schema.properties[c].items.properties[k].default: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property", "Unsupported value spec.versions[1].schema.openAPIV3Schema.properties[d].x-kubernetes-list-type: supported values: \"atomic\", \"set\", \"map\"", "Required value spec.versions[1].schema.openAPIV3Schema.properties[e].x-kubernetes-list-type: must be map if x-kubernetes-list-map-keys is non-empty", "Invalid value spec.versions[1].schema.openAPIV3Schema.properties[f].items.x-kubernetes-map-type: must be atomic as item of a list with x-kubernetes-list-type=set", "Unsupported value spec.versions[1].schema.openAPIV3Schema.properties[g].x-kubernetes-map-type: supported values: \"atomic\", \"granular\""}},
		{name: "default of the wrong type", mutate: setSchema(1, `{type: object, properties: {a: {type: integer, default: "one"}}}`), want: []string{"Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].default:  in body must be of type integer: \"string\""}},
		{name: "default with unknown fields", mutate: setSchema(1, `{type: object, properties: {a: {type: object, properties: {b: {type: string}}, default: {b: x, c: y}}}}`), want: []string{"Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].default: must not have unknown fields"}},
		{name: "default in metadata", mutate: setSchema(1, `{type: object, properties: {metadata: {type: object, default: {}}}}`), want: []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.properties[metadata].default: must not be set in top-level metadata"}},
		{name: "x-kubernetes-validations accepted without compiling", mutate: setSchema(1, `{type: object, x-kubernetes-validations: [{rule: "self.a > 0"}], properties: {a: {type: integer}}}`)},
		{name: "x-kubernetes-validations static rules", mutate: setSchema(1, `{type: object, properties: {a: {type: integer, x-kubernetes-validations: [{rule: " "}, {rule: "self > 0", message: " "}, {rule: "self > 0", reason: Bad}, {rule: "self > 0", fieldPath: ".nope"}]}}}`), want: []string{"Required value spec.versions[1].schema.openAPIV3Schema.properties[a].x-kubernetes-validations[0].rule: rule is not specified", "Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].x-kubernetes-validations[1].message: must be non-empty if specified", "Unsupported value spec.versions[1].schema.openAPIV3Schema.properties[a].x-kubernetes-validations[2].reason: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"", "Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].x-kubernetes-validations[3].fieldPath: must be a valid path"}},
		{name: "scale subresource paths", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{
				SpecReplicasPath: "spec.replicas", StatusReplicasPath: ".spec.replicas", LabelSelectorPath: ptr.To(".metadata.labels")}
		}, want: []string{"Invalid value spec.versions[0].subresources.scale.specReplicasPath: must be a simple json path starting with .", "Invalid value spec.versions[0].subresources.scale.statusReplicasPath: should be a json path under .status", "Invalid value spec.versions[0].subresources.scale.labelSelectorPath: should be a json path under either .spec or .status"}},
		{name: "scale subresource paths missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{}
		}, want: []string{"Required value spec.versions[0].subresources.scale.specReplicasPath: ", "Required value spec.versions[0].subresources.scale.statusReplicasPath: "}},
		{name: "printer columns", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{
				{Name: "", Type: "", JSONPath: ""},
				{Name: "A", Type: "float", Format: "hex", JSONPath: "spec.a"},
			}
		}, want: []string{"Required value spec.versions[0].additionalPrinterColumns[0].name: ", "Required value spec.versions[0].additionalPrinterColumns[0].type: must be one of boolean,date,integer,number,string", "Required value spec.versions[0].additionalPrinterColumns[0].JSONPath: ", "Invalid value spec.versions[0].additionalPrinterColumns[1].type: must be one of boolean,date,integer,number,string", "Invalid value spec.versions[0].additionalPrinterColumns[1].format: must be one of byte,date,date-time,double,float,int32,int64,password", "Invalid value spec.versions[0].additionalPrinterColumns[1].JSONPath: must be a simple json path starting with ."}},
		{name: "identical subresources and printer columns", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Subresources = crd.Spec.Versions[0].Subresources.DeepCopy()
			crd.Spec.Versions[1].AdditionalPrinterColumns = crd.Spec.Versions[0].AdditionalPrinterColumns
		}},
		{name: "conversion strategy unknown", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion.Strategy = "Magic"
		}, want: []string{"Unsupported value spec.conversion.strategy: supported values: \"None\", \"Webhook\""}},
		{name: "conversion webhook missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion.Strategy = apiextensionsv1.WebhookConverter
		}, want: []string{"Required value spec.conversion.webhookClientConfig: required when strategy is set to Webhook", "Required value spec.conversion.conversionReviewVersions: "}},
		{name: "conversion webhook url and service", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("http://user@h/p?q=1#f"), CABundle: []byte("junk")},
				ConversionReviewVersions: []string{"v2", "v2"},
			}}
		}, want: []string{"Invalid value spec.conversion.webhookClientConfig.url: 'https' is the only allowed URL scheme; desired format: https://host[/path]", "Invalid value spec.conversion.webhookClientConfig.url: user information is not permitted in the URL", "Invalid value spec.conversion.webhookClientConfig.url: fragments are not permitted in the URL", "Invalid value spec.conversion.webhookClientConfig.url: query parameters are not permitted in the URL", "Invalid value spec.conversion.conversionReviewVersions[1]: duplicate version", "Invalid value spec.conversion.conversionReviewVersions: must include at least one of v1, v1beta1"}},
		{name: "conversion webhook service", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Path: ptr.To("a//B"), Port: ptr.To[int32](0)}},
				ConversionReviewVersions: []string{"v1"},
			}}
		}, want: []string{"Required value spec.conversion.webhookClientConfig.service.name: ", "Required value spec.conversion.webhookClientConfig.service.namespace: ", "Invalid value spec.conversion.webhookClientConfig.service.port: port is not valid: must be between 1 and 65535, inclusive", "Invalid value spec.conversion.webhookClientConfig.service.path: must start with a '/'", "Invalid value spec.conversion.webhookClientConfig.service.path: segment[0] may not be empty", "Invalid value spec.conversion.webhookClientConfig.service.path: segment[1] may not be empty", "Invalid value spec.conversion.webhookClientConfig.service.path: segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "conversion None with webhook", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}
		}, want: []string{"Forbidden spec.conversion.conversionReviewVersions: should not be set when strategy is not set to Webhook"}},
		{name: "preserveUnknownFields true", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.PreserveUnknownFields = true
		}, want: []string{"Invalid value spec.preserveUnknownFields: must be false in order to use defaults in the schema", "Invalid value spec.preserveUnknownFields: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"}},
		{name: "protected group needs approval", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.stable.k8s.io", "stable.k8s.io"
		}, want: []string{"Required value metadata.annotations[api-approved.kubernetes.io]: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"}},
		{name: "protected group with an invalid approval", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.stable.k8s.io", "stable.k8s.io"
			crd.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "yes"}
		}, want: []string{"Invalid value metadata.annotations[api-approved.kubernetes.io]: protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"}},
		{name: "selectable fields", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.cronSpec"}, {JSONPath: ".spec.cronSpec"}, {JSONPath: ".spec.nope"}, {JSONPath: ".metadata.name"}, {JSONPath: ""}, {JSONPath: ".spec"}}
		}, want: []string{"Duplicate value spec.versions[0].selectableFields[1].jsonPath: ", "Invalid value spec.versions[0].selectableFields[2].jsonPath: is an invalid path: does not refer to a valid field", "Invalid value spec.versions[0].selectableFields[3].jsonPath: is an invalid path: does not refer to a valid field", "Required value spec.versions[0].selectableFields[4].jsonPath: ", "Invalid value spec.versions[0].selectableFields[5].jsonPath: must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."}},
		{name: "stored version not in spec", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Status.StoredVersions = []string{"v1", "v0"}
		}, want: []string{"Invalid value status.storedVersions[1]: missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions"}},
	}
}

// kubeValidate runs kube-apiserver's own validation (imported by the test
// only: the daemon cannot afford its dependencies) on crd.
func kubeValidate(t *testing.T, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	t.Helper()
	in, err := crdToInternal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if old == nil {
		return kubevalidation.ValidateCustomResourceDefinition(context.Background(), in)
	}
	oldIn, err := crdToInternal(old)
	if err != nil {
		t.Fatal(err)
	}
	return kubevalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, oldIn)
}

// TestCRDStrategy_Validate checks the causes of a create, one case per
// rule of kube-apiserver's ValidateCustomResourceDefinition, as
// kube-apiserver 1.36 words them (TestCRDValidation_MatchesKube checks the
// same cases against its code).
func TestCRDStrategy_Validate(t *testing.T) {
	for _, tt := range crdCreateCases() {
		t.Run(tt.name, func(t *testing.T) {
			crd := newCronTabCRD(t)
			tt.mutate(t, crd)
			got := causes(crdStrategy{}.Validate(crd))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// crdUpdateCase is an update of the (stored) CronTab CRD.
type crdUpdateCase struct {
	name       string
	mutateOld  func(old *apiextensionsv1.CustomResourceDefinition)
	mutate     func(crd *apiextensionsv1.CustomResourceDefinition)
	want       []string
	wantStatus []string // causes of the same change through the status subresource
}

func crdUpdateCases() []crdUpdateCase {
	established := func(old *apiextensionsv1.CustomResourceDefinition) {
		old.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	return []crdUpdateCase{
		{name: "add a version", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			v := *crd.Spec.Versions[1].DeepCopy()
			v.Name = "v2"
			crd.Spec.Versions = append(crd.Spec.Versions, v)
		}},
		{name: "group and plural are immutable", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Group, crd.Spec.Names.Plural = "other.example.com", "crons"
		}, want: []string{
			"Invalid value spec.group: field is immutable",
			"Invalid value spec.names.plural: field is immutable",
		}},
		{name: "scope and kind may change before the CRD is established", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = apiextensionsv1.ClusterScoped, "Cron", "CronList"
		}},
		{name: "scope and kind are immutable once established", mutateOld: established, mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = apiextensionsv1.ClusterScoped, "Cron", "CronList"
		}, want: []string{
			"Invalid value spec.scope: field is immutable",
			"Invalid value spec.names.kind: field is immutable",
		}},
		{name: "a stored version must stay in spec.versions", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Storage, crd.Spec.Versions[0].Storage = true, false
			crd.Status.StoredVersions = []string{"v1", "v1beta1"}
			crd.Spec.Versions = crd.Spec.Versions[1:]
		}, want: []string{
			"Invalid value status.storedVersions[0]: missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions",
		}},
		{name: "preserveUnknownFields cannot become true", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.PreserveUnknownFields = true
		}, want: []string{
			"Invalid value spec.preserveUnknownFields: must be false in order to use defaults in the schema",
			"Invalid value spec.preserveUnknownFields: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
		}},
		{name: "acceptedNames are validated", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "Crontabs", Kind: "CronTab", ListKind: "CronTab"}
		}, want: []string{
			"Invalid value status.acceptedNames.plural: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
			"Invalid value status.acceptedNames.listKind: kind and listKind may not be the same",
		}},
		{name: "storedVersions must keep the storage version", mutate: func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Status.StoredVersions = []string{"v1beta1"}
		}, want: []string{
			"Invalid value status.storedVersions: must have the storage version v1",
		}},
	}
}

// TestCRDStrategy_ValidateUpdate checks the causes of updates: the main
// resource applies spec and status rules (kube-apiserver's
// ValidateCustomResourceDefinitionUpdate validates the status it is given),
// and the status subresource only acceptedNames.
func TestCRDStrategy_ValidateUpdate(t *testing.T) {
	for _, tt := range crdUpdateCases() {
		t.Run(tt.name, func(t *testing.T) {
			old := newCronTabCRD(t)
			old.ResourceVersion = "5"
			if tt.mutateOld != nil {
				tt.mutateOld(old)
			}
			crd := old.DeepCopy()
			tt.mutate(crd)
			if got := causes(crdStrategy{}.ValidateUpdate(crd, old)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	t.Run("status subresource checks acceptedNames only", func(t *testing.T) {
		old := newCronTabCRD(t)
		old.ResourceVersion = "5"
		crd := old.DeepCopy()
		crd.Spec.Group = "other.example.com" // kept from old by PrepareForStatusUpdate
		crd.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "Crontab", Kind: "CronTab", ListKind: "CronTabList"}
		crdStrategy{}.PrepareForStatusUpdate(crd, old)
		if crd.Spec.Group != "stable.example.com" {
			t.Errorf("spec.group %q: status update changed spec", crd.Spec.Group)
		}
		want := []string{"Invalid value status.acceptedNames.singular: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"}
		if got := causes(crdStrategy{}.ValidateStatusUpdate(crd, old)); !reflect.DeepEqual(got, want) {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
	t.Run("status subresource leaves the spec alone", func(t *testing.T) {
		// A stored spec that today's rules refuse (a property without a
		// type is not structural) does not stop a status write, as in
		// kube-apiserver, whose status validation does not look at it.
		old := newCronTabCRD(t)
		old.ResourceVersion = "5"
		old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{}
		if len(crdStrategy{}.Validate(old)) == 0 {
			t.Fatal("the stored spec is valid: the case tests nothing")
		}
		crd := old.DeepCopy()
		crd.Status.AcceptedNames = crd.Spec.Names
		crdStrategy{}.PrepareForStatusUpdate(crd, old)
		if got := causes(crdStrategy{}.ValidateStatusUpdate(crd, old)); len(got) != 0 {
			t.Errorf("got %q, want no causes", got)
		}
		crd.Name = "other.stable.example.com"
		want := []string{"Invalid value metadata.name: field is immutable"}
		if got := causes(crdStrategy{}.ValidateStatusUpdate(crd, old)); !reflect.DeepEqual(got, want) {
			t.Errorf("renamed: got %q\nwant %q", got, want)
		}
	})
}

// TestCRDValidation_MatchesKube runs every case through kube-apiserver's
// own validation package, which the test imports (the daemon does not),
// and requires the very same errors, bad values included.
func TestCRDValidation_MatchesKube(t *testing.T) {
	for _, tt := range crdCreateCases() {
		t.Run("create "+tt.name, func(t *testing.T) {
			crd := newCronTabCRD(t)
			tt.mutate(t, crd)
			in, err := crdToInternal(crd)
			if err != nil {
				t.Fatal(err)
			}
			got := crdvalidation.Create(in)
			want := kubeValidate(t, crd, nil)
			if !sameErrors(got, want) {
				t.Errorf("got  %q\nwant %q", errorStrings(got), errorStrings(want))
			}
		})
	}
	for _, tt := range crdUpdateCases() {
		t.Run("update "+tt.name, func(t *testing.T) {
			old := newCronTabCRD(t)
			if tt.mutateOld != nil {
				tt.mutateOld(old)
			}
			crd := old.DeepCopy()
			tt.mutate(crd)
			in, _ := crdToInternal(crd)
			oldIn, _ := crdToInternal(old)
			got := crdvalidation.Update(in, oldIn)
			want := kubeValidate(t, crd, old)
			if !sameErrors(got, want) {
				t.Errorf("got  %q\nwant %q", errorStrings(got), errorStrings(want))
			}
		})
	}
}

// sameErrors compares two lists of errors as multisets: kube-apiserver
// visits a schema's properties in Go's map order, edgeapi by name.
func sameErrors(a, b field.ErrorList) bool {
	x, y := errorStrings(a), errorStrings(b)
	sort.Strings(x)
	sort.Strings(y)
	return reflect.DeepEqual(x, y)
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestCRDValidation_CELCompiled checks that x-kubernetes-validations rules
// are compiled: a rule that does not compile gets kube-apiserver's cause,
// with the CEL error and the rule as the bad value, and the same CRD with
// the rule fixed passes.
func TestCRDValidation_CELCompiled(t *testing.T) {
	crd := newCronTabCRD(t)
	setSchema(1, `{type: object, x-kubernetes-validations: [{rule: "self.a >"}], properties: {a: {type: integer}}}`)(t, crd)
	want := []string{"Invalid value spec.versions[1].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a >\n | ........^"}
	got := crdStrategy{}.Validate(crd)
	if !reflect.DeepEqual(causes(got), want) {
		t.Errorf("got  %q\nwant %q", causes(got), want)
	}
	if kube := kubeValidate(t, crd, nil); !sameErrors(got, kube) {
		t.Errorf("got  %q\nkube-apiserver %q", errorStrings(got), errorStrings(kube))
	}

	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.XValidations[0].Rule = "self.a > 1"
	if got := causes(crdStrategy{}.Validate(crd)); got != nil {
		t.Errorf("fixed rule: got %q, want no causes", got)
	}
}

// TestCRDValidation_CELCompileBudget checks that compiling rules is
// bounded: a schema with more rules than edgeapi compiles for one CRD
// gets one cause saying so, where kube-apiserver would spend seconds to
// minutes compiling, and rules that fit are still compiled.
func TestCRDValidation_CELCompileBudget(t *testing.T) {
	rules := make([]string, 10000)
	for i := range rules {
		rules[i] = `{rule: "self.a > 0 && self.a < 100"}`
	}
	crd := newCronTabCRD(t)
	setSchema(1, `{type: object, properties: {a: {type: integer, x-kubernetes-validations: [{rule: "self >"}]}}, x-kubernetes-validations: [`+strings.Join(rules, ", ")+`]}`)(t, crd)
	got := causes(crdStrategy{}.Validate(crd))
	want := []string{
		"Invalid value spec.versions[1].schema.openAPIV3Schema.properties[a].x-kubernetes-validations[0].rule: compilation failed: ERROR: <input>:1:7: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self >\n | ......^",
		"Forbidden spec.versions[1].schema.openAPIV3Schema.x-kubernetes-validations: the x-kubernetes-validations rules of this CustomResourceDefinition are too many or too large to compile: these rules and those checked after them were not compiled (try fewer rules, or rules on smaller parts of the schema)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	// A default is checked with a validator that compiles every rule
	// below it, from the same budget.
	crd = newCronTabCRD(t)
	setSchema(1, `{type: object, properties: {o: {type: object, default: {a: 1}, properties: {a: {type: integer}}, x-kubernetes-validations: [`+strings.Join(rules, ", ")+`]}}}`)(t, crd)
	got = causes(crdStrategy{}.Validate(crd))
	want = []string{"Forbidden spec.versions[1].schema.openAPIV3Schema.properties[o].default: the x-kubernetes-validations rules of this CustomResourceDefinition are too many or too large to compile: these rules and those checked after them were not compiled (try fewer rules, or rules on smaller parts of the schema)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default: got  %q\nwant %q", got, want)
	}
}

func TestCRDStrategy_PrepareForCreate(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(cronTabYAML), crd); err != nil {
		t.Fatal(err)
	}
	Scheme.Default(crd)
	crd.Status.StoredVersions = []string{"v0"}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	crd.Generation = 7
	crdStrategy{}.PrepareForCreate(crd)
	if crd.Generation != 1 {
		t.Errorf("generation %d, want 1", crd.Generation)
	}
	want := apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}}
	if !reflect.DeepEqual(crd.Status, want) {
		t.Errorf("status %+v, want %+v", crd.Status, want)
	}
	// SetDefaults_CustomResourceDefinitionSpec.
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter || crd.Spec.Names.ListKind != "CronTabList" {
		t.Errorf("defaults: conversion %+v listKind %q", crd.Spec.Conversion, crd.Spec.Names.ListKind)
	}
}

func TestCRDStrategy_PrepareForUpdate(t *testing.T) {
	old := newCronTabCRD(t)
	old.Status.AcceptedNames = old.Spec.Names

	t.Run("metadata change keeps the generation", func(t *testing.T) {
		crd := old.DeepCopy()
		crd.Labels = map[string]string{"a": "b"}
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		crdStrategy{}.PrepareForUpdate(crd, old)
		if crd.Generation != 1 || !reflect.DeepEqual(crd.Status, old.Status) {
			t.Errorf("generation %d status %+v", crd.Generation, crd.Status)
		}
	})
	t.Run("new storage version is recorded", func(t *testing.T) {
		crd := old.DeepCopy()
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
		crdStrategy{}.PrepareForUpdate(crd, old)
		if crd.Generation != 2 {
			t.Errorf("generation %d, want 2", crd.Generation)
		}
		if want := []string{"v1", "v1beta1"}; !reflect.DeepEqual(crd.Status.StoredVersions, want) {
			t.Errorf("storedVersions %v, want %v", crd.Status.StoredVersions, want)
		}
		if !reflect.DeepEqual(old.Status.StoredVersions, []string{"v1"}) {
			t.Errorf("old storedVersions changed: %v", old.Status.StoredVersions)
		}
	})
}

func TestCRDKind_Table(t *testing.T) {
	k := Builtin().Lookup(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	var names []string
	for _, c := range k.TableColumns {
		names = append(names, c.Name+"/"+c.Type)
	}
	if want := []string{"Name/string", "Created At/date"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	crd := newCronTabCRD(t)
	crd.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	cells, err := k.TableRow(crd)
	if want := []interface{}{"crontabs.stable.example.com", "2026-01-02T02:04:05Z"}; err != nil || !reflect.DeepEqual(cells, want) {
		t.Errorf("row %v (%v), want %v", cells, err, want)
	}
	if err := k.CheckFieldSelectorKey("spec.group"); err == nil || err.Error() != `"spec.group" is not a known field selector: only "metadata.name", "metadata.namespace"` {
		t.Errorf("field selector spec.group: %v", err)
	}
}

// TestCRDStrategy_WarningsBelow: a format is warned about wherever its
// node is (the check that skips the conversion for CRDs without one walks
// every kind of subschema).
func TestCRDStrategy_WarningsBelow(t *testing.T) {
	for _, y := range []string{
		`{type: object, format: colour}`,
		`{type: object, properties: {a: {type: object, properties: {b: {type: string, format: colour}}}}}`,
		`{type: object, properties: {a: {type: array, items: {type: string, format: colour}}}}`,
		`{type: object, additionalProperties: {type: string, format: colour}}`,
		`{type: object, allOf: [{format: colour}]}`,
		`{type: object, anyOf: [{format: colour}]}`,
		`{type: object, oneOf: [{format: colour}]}`,
		`{type: object, not: {format: colour}}`,
		`{type: object, patternProperties: {"^a": {type: string, format: colour}}}`,
		`{type: object, definitions: {d: {type: string, format: colour}}}`,
		`{type: object, dependencies: {a: {format: colour}}}`,
		`{type: array, items: [{type: string, format: colour}], additionalItems: {format: colour}}`,
		`{type: integer, format: colour}`,
	} {
		crd := newCronTabCRD(t)
		setSchema(0, y)(t, crd)
		if got := (crdStrategy{}).WarningsOnCreate(crd); len(got) == 0 {
			t.Errorf("%s: no warning", y)
		}
	}
	crd := newCronTabCRD(t)
	setSchema(0, `{type: object, properties: {a: {type: string, format: date-time}, b: {type: integer, format: int32}}}`)(t, crd)
	if got := (crdStrategy{}).WarningsOnCreate(crd); got != nil {
		t.Errorf("known formats: got %q, want none", got)
	}
}

func TestCRDStrategy_Warnings(t *testing.T) {
	old := newCronTabCRD(t)
	crd := old.DeepCopy()
	setSchema(1, `{type: object, properties: {a: {type: string, format: colour}, b: {type: string, format: date-time}}}`)(t, crd)
	want := []string{`unrecognized format "colour"`}
	if got := (crdStrategy{}).WarningsOnCreate(crd); !reflect.DeepEqual(got, want) {
		t.Errorf("create: got %q, want %q", got, want)
	}
	if got := (crdStrategy{}).WarningsOnUpdate(crd, old); !reflect.DeepEqual(got, want) {
		t.Errorf("update introducing it: got %q, want %q", got, want)
	}
	if got := (crdStrategy{}).WarningsOnUpdate(crd, crd.DeepCopy()); got != nil {
		t.Errorf("update keeping it: got %q, want none", got)
	}
}
