package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeapi/edgeapi/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestStoreError_space checks the Statuses of the two space conditions: a
// full file system is a 500 with Retry-After, the backend quota a 507
// without it; both say "database space exceeded", as etcd does.
func TestStoreError_space(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name       string
		err        error
		code       int32
		reason     string
		retryAfter int32
		says       string
	}{
		{name: "file system full", err: fmt.Errorf("commit: %w", store.ErrNoSpace), code: http.StatusInternalServerError,
			reason: "InternalError", retryAfter: 1, says: "file system holding the data directory is full"},
		{name: "quota", err: fmt.Errorf("create: %w", store.ErrQuotaExceeded), code: http.StatusInsufficientStorage,
			reason: "InsufficientStorage", says: "--quota-backend-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := storeError(tt.err, gr, "x")
			se, ok := got.(*apierrors.StatusError)
			if !ok {
				t.Fatalf("storeError() = %T %v, want a *StatusError", got, got)
			}
			st := se.ErrStatus
			if st.Code != tt.code || string(st.Reason) != tt.reason || !strings.Contains(st.Message, "database space exceeded") ||
				!strings.Contains(st.Message, tt.says) {
				t.Errorf("storeError() Status = %d %s %q, want %d %s saying %q", st.Code, st.Reason, st.Message, tt.code, tt.reason, tt.says)
			}
			var retry int32
			if st.Details != nil {
				retry = st.Details.RetryAfterSeconds
			}
			if retry != tt.retryAfter {
				t.Errorf("storeError() RetryAfterSeconds = %d, want %d", retry, tt.retryAfter)
			}
		})
	}
}
