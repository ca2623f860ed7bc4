package audit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The event types below have the JSON form of kube-apiserver's
// audit.k8s.io/v1 Event (k8s.io/apiserver/pkg/apis/audit/v1): the same
// field names, order and omitempty rules, so that a line reads as
// kube-apiserver's log backend (format json) writes it. They are declared
// here rather than imported because linking that package adds about
// 330 KB to the stripped binary (its scheme registration and Protobuf
// code); the unit tests decode every line into it strictly.

// HeaderAuditID is the request and response header that carries the
// audit ID, as in kube-apiserver. net/http sends it as "Audit-Id".
const HeaderAuditID = "Audit-ID"

// Event levels and stages, as kube-apiserver names them.
const (
	// LevelMetadata logs the request's metadata (user, verb, object, code)
	// and never its body or the response's.
	LevelMetadata = "Metadata"
	// StageResponseStarted is the stage of kube-apiserver's event for a
	// request that failed authentication; StageResponseComplete that of
	// every other event here; StagePanic that of a request whose handler
	// panicked.
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// Annotation keys kube-apiserver's authorization filter sets, and their
// decision values.
const (
	AnnotationDecision = "authorization.k8s.io/decision"
	AnnotationReason   = "authorization.k8s.io/reason"
	DecisionAllow      = "allow"
	DecisionForbid     = "forbid"
)

// Event is one audit event: one JSON line in the log.
type Event struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	// User is who authenticated ({} when nobody did); ImpersonatedUser
	// whom they acted as through the Impersonate-* headers.
	User             UserInfo  `json:"user"`
	ImpersonatedUser *UserInfo `json:"impersonatedUser,omitempty"`
	// SourceIPs are the X-Forwarded-For addresses, X-Real-Ip, and last the
	// peer's address, as kube-apiserver lists them (the headers are the
	// client's word; the last address is the connection's).
	SourceIPs []string `json:"sourceIPs,omitempty"`
	// UserAgent is cut to 1024 bytes, with "...TRUNCATED" appended.
	UserAgent string           `json:"userAgent,omitempty"`
	ObjectRef *ObjectReference `json:"objectRef,omitempty"`
	// ResponseStatus has the code, and for an answer that was a Status
	// (errors, and deletes answered with Success) its status, message,
	// reason and details.
	ResponseStatus           *metav1.Status    `json:"responseStatus,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// UserInfo is authentication.k8s.io/v1 UserInfo.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectReference names the object a resource request is about.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}
