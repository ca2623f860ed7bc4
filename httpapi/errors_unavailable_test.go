package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/store"
)

// TestStoreError_unavailable checks the Statuses of a storage that cannot
// answer: 503 with Retry-After (client-go sends the request again by
// itself) when nothing was changed, 504 Timeout without it when a write
// may have been applied; both keep the storage's message.
func TestStoreError_unavailable(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name       string
		err        error
		code       int32
		reason     metav1.StatusReason
		retryAfter int32
	}{
		{name: "unavailable", err: fmt.Errorf("get object: etcd did not answer within 15s: %w", store.ErrUnavailable),
			code: http.StatusServiceUnavailable, reason: metav1.StatusReasonServiceUnavailable, retryAfter: 1},
		{name: "unknown outcome", err: fmt.Errorf("update object: etcd did not answer within 15s: %w", store.ErrUnknownOutcome),
			code: http.StatusGatewayTimeout, reason: metav1.StatusReasonTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := storeError(tt.err, gr, "x")
			se, ok := got.(*apierrors.StatusError)
			if !ok {
				t.Fatalf("storeError() = %T %v, want a *StatusError", got, got)
			}
			st := se.ErrStatus
			if st.Code != tt.code || st.Reason != tt.reason || !strings.Contains(st.Message, "etcd did not answer within 15s") {
				t.Errorf("storeError() Status = %d %s %q, want %d %s with the storage's message", st.Code, st.Reason, st.Message, tt.code, tt.reason)
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
