package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Table columns shared by kube-apiserver's printers
// (pkg/printers/internalversion/printers.go). Descriptions come from the
// swagger docs of the k8s.io/api types, as there.

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

// now is the clock of the Age cells; a var so tests can fix it.
var now = time.Now

// translateTimestampSince renders the time since t as kubectl shows ages
// ("5m", "3d"), or "<unknown>" for a zero time.
func translateTimestampSince(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}

// translateMicroTimestampSince is translateTimestampSince for MicroTime.
func translateMicroTimestampSince(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}
