package httpapi

import (
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/registry"
)

// includeObject policies of a Table request.
const (
	includeNone     = "None"
	includeMetadata = "Metadata"
	includeObject   = "Object"
)

// checkIncludeObject checks a Table request's includeObject parameter, as
// kube-apiserver's optionsForTransform does: 400, not 422, since the
// TableOptions are not an object the client sent.
func checkIncludeObject(include string) error {
	switch include {
	case "", includeNone, includeMetadata, includeObject:
		return nil
	}
	err := field.Invalid(field.NewPath("includeObject"), include, "must be 'Metadata', 'Object', 'None', or empty")
	return apierrors.NewBadRequest("Unable to convert to Table as requested: " + err.Error())
}

// tableFor builds the server-side Table of stored objects, as kubectl get
// asks for it. listMeta is nil for a single object.
func (s *Server) tableFor(k *registry.Kind, rep representation, values [][]byte, listMeta *metav1.ListMeta, include string) (*metav1.Table, error) {
	if err := checkIncludeObject(include); err != nil {
		return nil, err
	}
	if include == "" {
		include = includeMetadata
	}
	metaVersion := rep.metaVersion
	if metaVersion == "" {
		metaVersion = "v1"
	}
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + metaVersion},
		ColumnDefinitions: k.TableColumns,
		Rows:              make([]metav1.TableRow, 0, len(values)),
	}
	if listMeta != nil {
		t.ListMeta = *listMeta
	}
	for _, v := range values {
		obj, err := k.DecodeStored(v)
		if err != nil {
			return nil, err
		}
		cells, err := k.TableRow(obj)
		if err != nil {
			return nil, err
		}
		row := metav1.TableRow{Cells: cells}
		switch include {
		case includeMetadata:
			pom, err := partialMetadata(k, v, metaVersion)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(pom)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: b}
		case includeObject:
			b, err := objectJSON(k, v)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: json.RawMessage(b)}
		}
		t.Rows = append(t.Rows, row)
		if listMeta == nil {
			t.ResourceVersion = registry.Accessor(obj).GetResourceVersion()
		}
	}
	return t, nil
}
