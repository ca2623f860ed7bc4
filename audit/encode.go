package audit

import (
	"encoding/json"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/internal/jsonstr"
)

// appendJSON appends ev as encoding/json marshals it, byte for byte (the
// tests compare the two), without reflection: about a third of the time
// and a handful of allocations instead of twenty. The Status details, in
// error answers only, are left to encoding/json.
func (ev *Event) appendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		field(name)
		b = appendJSONString(b, v)
	}
	str("kind", ev.Kind, true)
	str("apiVersion", ev.APIVersion, true)
	str("level", ev.Level, false)
	str("auditID", ev.AuditID, false)
	str("stage", ev.Stage, false)
	str("requestURI", ev.RequestURI, false)
	str("verb", ev.Verb, false)
	field("user")
	b = ev.User.appendJSON(b)
	if ev.ImpersonatedUser != nil {
		field("impersonatedUser")
		b = ev.ImpersonatedUser.appendJSON(b)
	}
	if len(ev.SourceIPs) > 0 {
		field("sourceIPs")
		b = appendJSONStrings(b, ev.SourceIPs)
	}
	str("userAgent", ev.UserAgent, true)
	if ev.ObjectRef != nil {
		field("objectRef")
		b = ev.ObjectRef.appendJSON(b)
	}
	if ev.ResponseStatus != nil {
		field("responseStatus")
		b = appendStatus(b, ev.ResponseStatus)
	}
	field("requestReceivedTimestamp")
	b = appendMicroTime(b, ev.RequestReceivedTimestamp)
	field("stageTimestamp")
	b = appendMicroTime(b, ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		field("annotations")
		b = appendStringMap(b, ev.Annotations)
	}
	return append(b, '}')
}

func (u *UserInfo) appendJSON(b []byte) []byte {
	b = append(b, '{')
	sep := ""
	if u.Username != "" {
		b = append(b, `"username":`...)
		b = appendJSONString(b, u.Username)
		sep = ","
	}
	if u.UID != "" {
		b = append(append(b, sep...), `"uid":`...)
		b = appendJSONString(b, u.UID)
		sep = ","
	}
	if len(u.Groups) > 0 {
		b = append(append(b, sep...), `"groups":`...)
		b = appendJSONStrings(b, u.Groups)
		sep = ","
	}
	if len(u.Extra) > 0 {
		b = append(append(b, sep...), `"extra":{`...)
		for i, k := range sortedKeys(u.Extra) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			if v := u.Extra[k]; v == nil {
				b = append(b, "null"...)
			} else {
				b = appendJSONStrings(b, v)
			}
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func (r *ObjectReference) appendJSON(b []byte) []byte {
	b = append(b, '{')
	sep := ""
	for _, f := range [...]struct{ name, v string }{
		{"resource", r.Resource},
		{"namespace", r.Namespace},
		{"name", r.Name},
		{"uid", r.UID},
		{"apiGroup", r.APIGroup},
		{"apiVersion", r.APIVersion},
		{"resourceVersion", r.ResourceVersion},
		{"subresource", r.Subresource},
	} {
		if f.v == "" {
			continue
		}
		b = append(append(b, sep...), '"')
		b = append(append(b, f.name...), '"', ':')
		b = appendJSONString(b, f.v)
		sep = ","
	}
	return append(b, '}')
}

// appendStatus appends the fields of st an event sets: kube-apiserver's
// selection (status, message, reason, details, code), under an empty
// list metadata.
func appendStatus(b []byte, st *metav1.Status) []byte {
	b = append(b, `{"metadata":{}`...)
	if st.Status != "" {
		b = append(b, `,"status":`...)
		b = appendJSONString(b, st.Status)
	}
	if st.Message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, st.Message)
	}
	if st.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, string(st.Reason))
	}
	if st.Details != nil {
		if d, err := json.Marshal(st.Details); err == nil {
			b = append(b, `,"details":`...)
			b = append(b, d...)
		}
	}
	if st.Code != 0 {
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(st.Code), 10)
	}
	return append(b, '}')
}

// appendMicroTime appends t as metav1.MicroTime marshals it: RFC 3339 in
// UTC with microseconds, or null for the zero time.
func appendMicroTime(b []byte, t metav1.MicroTime) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, metav1.RFC3339Micro)
	return append(b, '"')
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendStringMap appends m with its keys sorted, as encoding/json does.
func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// appendJSONString appends s as encoding/json writes it (with its HTML
// escaping, on in kube-apiserver's serializer).
func appendJSONString(b []byte, s string) []byte { return jsonstr.Append(b, s) }
