package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests in this file send one request near the 3 MiB body limit whose
// cost grew faster than linearly in its size, and check that it is
// answered, with the right Status, without the daemon's peak RSS passing a
// fixed ceiling. The deadline is a hang guard, not a timing check.

const (
	// hugeInputDeadline bounds each request; before the fixes, 300,000
	// invalid finalizers went unanswered for minutes.
	hugeInputDeadline = 60 * time.Second
	// hugeInputRSSCeiling is a generous bound on the daemon's peak RSS
	// (VmHWM): it starts near 25 MiB, and the unbounded cases reached
	// 370 MiB to 1.5 GiB.
	hugeInputRSSCeiling = 200 << 20
)

// sendHuge sends body with the hang-guard deadline and returns the answer.
func sendHuge(t *testing.T, d *Daemon, method, path, contentType string, body []byte) httpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hugeInputDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (%d bytes): %v", method, path, len(body), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// peakRSS returns the daemon's peak resident set size (VmHWM) in bytes.
func peakRSS(t *testing.T, d *Daemon) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Skipf("read peak RSS: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", d.cmd.Process.Pid)
	return 0
}

// checkPeakRSS fails the test if the daemon's peak RSS passed the ceiling.
func checkPeakRSS(t *testing.T, d *Daemon) {
	t.Helper()
	checkPeakRSSUnder(t, d, hugeInputRSSCeiling)
}

// checkPeakRSSUnder checks the daemon's peak RSS against ceiling bytes.
func checkPeakRSSUnder(t *testing.T, d *Daemon, ceiling int64) {
	t.Helper()
	rss := peakRSS(t, d)
	if emulatedDaemon {
		t.Logf("daemon peak RSS %.1f MiB under emulation (EDGEAPI_E2E_EMULATED=1): qemu's memory is in it, so the %d MiB ceiling is not checked", float64(rss)/(1<<20), ceiling>>20)
		return
	}
	t.Logf("daemon peak RSS %.1f MiB", float64(rss)/(1<<20))
	if rss > ceiling {
		t.Errorf("daemon peak RSS = %d MiB, want at most %d MiB", rss>>20, ceiling>>20)
	}
}

// finalizers returns n finalizer names: n copies of "f" (not qualified,
// so invalid) when invalid, else n distinct qualified names in an order
// that is not sorted.
func finalizers(n int, invalid bool) []string {
	out := make([]string, n)
	for i := range out {
		if invalid {
			out[i] = "f"
		} else {
			out[i] = fmt.Sprintf("a/%x", i)
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeStatus decodes a Status answer and checks its code and reason.
func decodeStatus(t *testing.T, res httpResult, code int32, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(res.Body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("answer %d is not a Status (%v): %.300s", res.Status, err, res.Body)
	}
	if int32(res.Status) != code || st.Code != code || st.Reason != reason {
		t.Fatalf("got %d %d %q, want %d %q: %.300s", res.Status, st.Code, st.Reason, code, reason, st.Message)
	}
	return st
}

const hugeCMs = "/api/v1/namespaces/default/configmaps"

// TestHugeInput_InvalidFinalizers creates, and json-patches in, 300,000
// invalid finalizers (1.5 MB): the answer is a 422 that lists the first
// 1,000 errors and counts the rest, nothing is stored, and memory stays
// bounded. Before the fix the Invalid message was built by quadratic string
// concatenation: no answer within 170 s, RSS 24 MB -> 367 MB and more.
func TestHugeInput_InvalidFinalizers(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const n = 300000
	fins := finalizers(n, true)

	t.Run("create", func(t *testing.T) {
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "bad", "finalizers": fins}})
		st := decodeStatus(t, sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body), 422, metav1.StatusReasonInvalid)
		if got, want := len(st.Details.Causes), 1000; got != want {
			t.Errorf("got %d causes, want %d", got, want)
		}
		if want := fmt.Sprintf(", and %d more errors]", n-1000); !strings.HasSuffix(st.Message, want) {
			t.Errorf("got message ending %q, want suffix %q", st.Message[max(0, len(st.Message)-80):], want)
		}
		if c := st.Details.Causes[0]; c.Field != "metadata.finalizers[0]" || c.Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("got first cause %+v, want an invalid metadata.finalizers[0]", c)
		}
		if res := rawGetNoFatal(d, hugeCMs+"/bad"); res.Status != http.StatusNotFound {
			t.Errorf("GET after a refused create: got %d, want 404", res.Status)
		}
	})

	t.Run("json-patch", func(t *testing.T) {
		small := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "small"}, "data": map[string]string{"k": "v"}})
		if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", small); res.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.Status, res.Body)
		}
		before := rawGetNoFatal(d, hugeCMs+"/small")
		patch := mustJSON(t, []map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": fins}})
		for i := 0; i < 3; i++ {
			st := decodeStatus(t, sendHuge(t, d, http.MethodPatch, hugeCMs+"/small", "application/json-patch+json", patch), 422, metav1.StatusReasonInvalid)
			if got, want := len(st.Details.Causes), 1000; got != want {
				t.Errorf("got %d causes, want %d", got, want)
			}
		}
		if after := rawGetNoFatal(d, hugeCMs+"/small"); after.Status != http.StatusOK || !bytes.Equal(after.Body, before.Body) {
			t.Errorf("stored object changed by refused patches:\nbefore %s\nafter  %.300s", before.Body, after.Body)
		}
	})
	checkPeakRSS(t, d)
}

// TestHugeInput_ValidFinalizers creates, and json-patches in, 200,000
// distinct valid finalizers (2 MB, unsorted): both succeed and store every
// finalizer. Before the fix structured-merge-diff's field sets, sorted
// slices filled by insertion, made the create take 43 s (100,000 in
// reverse order: 28 s). Such an object is stored without managedFields.
func TestHugeInput_ValidFinalizers(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const n = 200000
	fins := finalizers(n, false)
	stored := func(t *testing.T, name string) {
		t.Helper()
		res := rawGetNoFatal(d, hugeCMs+"/"+name)
		var got struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(res.Body, &got); err != nil || res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", name, res.Status, err)
		}
		if len(got.Metadata.Finalizers) != n || got.Metadata.Finalizers[n-1] != fins[n-1] {
			t.Errorf("GET %s: got %d finalizers, want %d", name, len(got.Metadata.Finalizers), n)
		}
	}

	t.Run("create", func(t *testing.T) {
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "many", "finalizers": fins}})
		if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body); res.Status != http.StatusCreated {
			t.Fatalf("create: got %d, want 201: %.300s", res.Status, res.Body)
		}
		stored(t, "many")
	})

	t.Run("json-patch", func(t *testing.T) {
		small := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "small"}})
		if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", small); res.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.Status, res.Body)
		}
		// Three times, as the report did: the second and third replace the
		// list with an equal one.
		patch := mustJSON(t, []map[string]any{{"op": "add", "path": "/metadata/finalizers", "value": fins}})
		for i := 0; i < 3; i++ {
			if res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/small", "application/json-patch+json", patch); res.Status != http.StatusOK {
				t.Fatalf("patch %d: got %d, want 200: %.300s", i, res.Status, res.Body)
			}
		}
		stored(t, "small")
	})
	checkPeakRSS(t, d)
}

// TestHugeInput_ControllerOwnerReferences creates a ConfigMap with 5,000
// owner references that all claim to be the controller (415 KB): the
// answer is a 422 with one "Only one reference" error. apimachinery
// reports each extra controller with the whole list as its value, which
// took 22 s and 2.2 GB before the fix.
func TestHugeInput_ControllerOwnerReferences(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const n = 5000
	refs := make([]map[string]any, n)
	for i := range refs {
		refs[i] = map[string]any{"apiVersion": "v1", "kind": "K", "name": "n", "uid": fmt.Sprintf("u%x", i), "controller": true}
	}
	body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ctl", "ownerReferences": refs}})
	st := decodeStatus(t, sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body), 422, metav1.StatusReasonInvalid)
	if got, want := len(st.Details.Causes), 1; got != want {
		t.Fatalf("got %d causes, want %d", got, want)
	}
	c := st.Details.Causes[0]
	if want := `Only one reference can have Controller set to true. Found "true" in references for K/n and K/n`; c.Field != "metadata.ownerReferences" || !strings.HasSuffix(c.Message, want) {
		t.Errorf("got cause %s %.100s...%s, want metadata.ownerReferences ending %q", c.Field, c.Message, c.Message[max(0, len(c.Message)-100):], want)
	}
	if res := rawGetNoFatal(d, hugeCMs+"/ctl"); res.Status != http.StatusNotFound {
		t.Errorf("GET after a refused create: got %d, want 404", res.Status)
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_JSONPatchCopy copies a 1 MB list 200 times in one JSON
// patch: kube-apiserver stops "copy" operations past 3 MiB in all
// (JSONPatchMaxCopyBytes) and answers 422. Without that limit, 2,000 such
// copies took the daemon past 4 GB in 40 s, unanswered.
func TestHugeInput_JSONPatchCopy(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "copied", "finalizers": finalizers(100000, false)}})
	if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body); res.Status != http.StatusCreated {
		t.Fatalf("create: got %d, want 201: %.300s", res.Status, res.Body)
	}
	before := rawGetNoFatal(d, hugeCMs+"/copied")
	ops := make([]map[string]any, 200)
	for i := range ops {
		ops[i] = map[string]any{"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/0"}
	}
	res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/copied", "application/json-patch+json", mustJSON(t, ops))
	decodeStatus(t, res, 422, metav1.StatusReasonInvalid)
	if after := rawGetNoFatal(d, hugeCMs+"/copied"); after.Status != http.StatusOK || !bytes.Equal(after.Body, before.Body) {
		t.Errorf("stored object changed by a refused patch: got %d, %d bytes, want %d bytes", after.Status, len(after.Body), len(before.Body))
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_StrategicMergeList orders 50,000 finalizers with a
// strategic merge patch's $setElementOrder: apimachinery's strategicpatch
// orders and merges lists pairwise, and this went unanswered for more than
// 60 s. Such a patch is now a 413 that names the list, and a small list
// still merges.
func TestHugeInput_StrategicMergeList(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const n = 50000
	fins := finalizers(n, false)
	body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ordered", "finalizers": fins}})
	if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body); res.Status != http.StatusCreated {
		t.Fatalf("create: got %d, want 201: %.300s", res.Status, res.Body)
	}
	before := rawGetNoFatal(d, hugeCMs+"/ordered")
	reversed := make([]string, n)
	for i, f := range fins {
		reversed[n-1-i] = f
	}
	patch := mustJSON(t, map[string]any{"metadata": map[string]any{"$setElementOrder/finalizers": reversed}})
	st := decodeStatus(t, sendHuge(t, d, http.MethodPatch, hugeCMs+"/ordered", "application/strategic-merge-patch+json", patch),
		http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	if want := "Request entity too large: The allowed maximum entries in a list merged by a strategic merge patch is 2048, got 100000 in metadata.finalizers"; st.Message != want {
		t.Errorf("got message %q, want %q", st.Message, want)
	}
	if after := rawGetNoFatal(d, hugeCMs+"/ordered"); after.Status != http.StatusOK || !bytes.Equal(after.Body, before.Body) {
		t.Errorf("stored object changed by a refused patch: got %d, %d bytes, want %d bytes", after.Status, len(after.Body), len(before.Body))
	}

	small := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "few", "finalizers": finalizers(1000, false)}})
	if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", small); res.Status != http.StatusCreated {
		t.Fatalf("create: got %d, want 201: %.300s", res.Status, res.Body)
	}
	patch = mustJSON(t, map[string]any{"metadata": map[string]any{"finalizers": []string{"b/new"}}})
	if res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/few", "application/strategic-merge-patch+json", patch); res.Status != http.StatusOK {
		t.Errorf("merge one finalizer into 1,000: got %d, want 200: %.300s", res.Status, res.Body)
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_UnknownFieldWarnings sends a strategic merge patch with
// 150,000 unknown fields (fieldValidation defaults to Warn): the answer is
// a 200 whose Warning headers hold about 4 KiB of text, as kube-apiserver's
// warning recorder truncates them. Before, it carried 7,154 Warning
// headers, 307 KB.
func TestHugeInput_UnknownFieldWarnings(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	small := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "warned"}})
	if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", small); res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	patch := map[string]any{}
	for i := 0; i < 150000; i++ {
		patch[fmt.Sprintf("u%x", i)] = 1
	}
	res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/warned", "application/strategic-merge-patch+json", mustJSON(t, patch))
	if res.Status != http.StatusOK {
		t.Fatalf("patch: got %d, want 200: %.300s", res.Status, res.Body)
	}
	warnings := res.Header.Values("Warning")
	size := 0
	for _, w := range warnings {
		size += len(w)
	}
	t.Logf("%d Warning headers, %d bytes", len(warnings), size)
	// 4 KiB of text, one item of up to 256 runes past it, and each
	// header's `299 - "..."` and escaping.
	if len(warnings) == 0 || size > 4096+256+len(warnings)*12 {
		t.Errorf("got %d Warning headers, %d bytes, want some and about 4 KiB of text", len(warnings), size)
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_ApplyLargeList server-side applies a ConfigMap with 20,000
// finalizers: field ownership is tracked for lists of at most 10,000
// entries (structured-merge-diff's field sets are quadratic past that), so
// the apply is a 400 that names the list, and nothing is stored. 9,000
// finalizers apply.
func TestHugeInput_ApplyLargeList(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	for _, tt := range []struct {
		n    int
		want int
	}{{20000, http.StatusBadRequest}, {9000, http.StatusCreated}} {
		name := fmt.Sprint("applied-", tt.n)
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "finalizers": finalizers(tt.n, false)}})
		res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/"+name+"?fieldManager=big", "application/apply-patch+yaml", body)
		if res.Status != tt.want {
			t.Fatalf("apply %d finalizers: got %d, want %d: %.300s", tt.n, res.Status, tt.want, res.Body)
		}
		if tt.want != http.StatusBadRequest {
			continue
		}
		st := decodeStatus(t, res, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if want := "metadata.finalizers has 20000 entries, more than the 10000 for which field ownership is tracked"; !strings.HasSuffix(st.Message, want) {
			t.Errorf("got message %q, want suffix %q", st.Message, want)
		}
		if res := rawGetNoFatal(d, hugeCMs+"/"+name); res.Status != http.StatusNotFound {
			t.Errorf("GET after a refused apply: got %d, want 404", res.Status)
		}
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_JSONPatchArrayOps inserts 10,000 finalizers at the front
// of 100,000 with one JSON patch: json-patch copies the array for each
// insert, and this took 5.8 s (18 s with 300,000). The patch is now a 413
// and the object is unchanged; 10,000 appends ("-") still apply.
func TestHugeInput_JSONPatchArrayOps(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "shifted", "finalizers": finalizers(100000, false)}})
	if res := sendHuge(t, d, http.MethodPost, hugeCMs, "application/json", body); res.Status != http.StatusCreated {
		t.Fatalf("create: got %d, want 201: %.300s", res.Status, res.Body)
	}
	before := rawGetNoFatal(d, hugeCMs+"/shifted")
	ops := func(path string) []byte {
		ops := make([]map[string]any, 10000)
		for i := range ops {
			ops[i] = map[string]any{"op": "add", "path": path, "value": fmt.Sprintf("b/%d", i)}
		}
		return mustJSON(t, ops)
	}
	st := decodeStatus(t, sendHuge(t, d, http.MethodPatch, hugeCMs+"/shifted", "application/json-patch+json", ops("/metadata/finalizers/0")),
		http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	if want := "Request entity too large: The allowed maximum array elements a JSON patch may shift is 50000000, got 1000000000 in 10000 operations"; st.Message != want {
		t.Errorf("got message %q, want %q", st.Message, want)
	}
	if after := rawGetNoFatal(d, hugeCMs+"/shifted"); after.Status != http.StatusOK || !bytes.Equal(after.Body, before.Body) {
		t.Errorf("stored object changed by a refused patch: got %d, %d bytes, want %d bytes", after.Status, len(after.Body), len(before.Body))
	}
	if res := sendHuge(t, d, http.MethodPatch, hugeCMs+"/shifted", "application/json-patch+json", ops("/metadata/finalizers/-")); res.Status != http.StatusOK {
		t.Errorf("10,000 appends: got %d, want 200: %.300s", res.Status, res.Body)
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_ManyDeletedOwners gives a ConfigMap references to 4,000
// deleted owners and one live one: the garbage collector drops the 4,000
// references. It searched the change log once per reference, so 3,000
// took it 40 s; the deadline is a hang guard.
func TestHugeInput_ManyDeletedOwners(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	// The setup is 8,000 small requests; only the collector's work has a
	// deadline.
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	const n = 4000
	live, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: live.Name, UID: live.UID}}
	for i := 0; i < n; i++ {
		o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("gone-", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID})
	}
	for i := 0; i < n; i++ {
		if err := cms.Delete(ctx, fmt.Sprint("gone-", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: refs}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait, stop := context.WithTimeout(ctx, hugeInputDeadline)
	defer stop()
	for {
		dep, err := cms.Get(wait, "dependent", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get dependent: %v", err)
		}
		if got := dep.OwnerReferences; len(got) == 1 && got[0].UID == live.UID {
			break
		}
		select {
		case <-wait.Done():
			t.Fatalf("after %v the dependent still has %d owner references, want the live owner's only", hugeInputDeadline, len(dep.OwnerReferences))
		case <-time.After(200 * time.Millisecond):
		}
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_ConcurrentLargeBodies sends eight large dry-run creates
// at once (2.9 MB each: 196,608 data keys, the shape whose decoding and
// field tracking cost most). Each costs around a hundred times its size
// while it is processed, so together they took the daemon past 1 GiB;
// large requests are now processed one at a time, and one that waits too
// long for its turn gets 429 with Retry-After (on a loaded machine), which
// the clients retry as client-go does. Every one must end created, and the
// peak RSS stays under the ceiling.
func TestHugeInput_ConcurrentLargeBodies(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const clients = 8
	const keys = (3 << 20) / 16 // a 2.9 MB body; the values stay under 1 MiB
	data := make(map[string]string, keys)
	for i := 0; i < keys; i++ {
		data[fmt.Sprintf("k%x", i)] = "v"
	}
	errs := make(chan string, clients)
	for i := 0; i < clients; i++ {
		go func(i int) {
			body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("large-%d", i)}, "data": data})
			if err != nil {
				errs <- err.Error()
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), hugeInputDeadline)
			defer cancel()
			// A request that waited too long for a large-request slot
			// gets 429 with Retry-After; like client-go, retry it then.
			for attempt := 0; ; attempt++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.URL+hugeCMs+"?dryRun=All", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- fmt.Sprintf("client %d: %v", i, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests && attempt < 10 {
					var st metav1.Status
					if json.Unmarshal(b, &st) != nil || st.Code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
						errs <- fmt.Sprintf("client %d: 429 without a Status and Retry-After: 1: %q %.300s", i, resp.Header.Get("Retry-After"), b)
						return
					}
					time.Sleep(time.Second)
					continue
				}
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Sprintf("client %d: %d %.300s", i, resp.StatusCode, b)
					return
				}
				errs <- ""
				return
			}
		}(i)
	}
	for i := 0; i < clients; i++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_ConcurrentPatchesOfLargeObjects: small patches of large
// stored objects, eight at once, take large-request slots as large bodies
// do, so their work on the objects does not pile up in memory.
func TestHugeInput_ConcurrentPatchesOfLargeObjects(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "large-patch")
	const n = 8
	for i := 0; i < n; i++ {
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprint("big-", i), "finalizers": finalizers(60000, false)}})
		if res := sendHuge(t, d, "POST", "/api/v1/namespaces/large-patch/configmaps", "application/json", body); res.Status != http.StatusCreated {
			t.Fatalf("create big-%d: %d %.300s", i, res.Status, res.Body)
		}
	}
	var wg sync.WaitGroup
	for round := 0; round < 3; round++ {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("PATCH", fmt.Sprintf("%s/api/v1/namespaces/large-patch/configmaps/big-%d", d.URL, i),
					strings.NewReader(fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, round)))
				req.Header.Set("Content-Type", "application/merge-patch+json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("patch big-%d: %v", i, err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("patch big-%d: %d", i, resp.StatusCode)
				}
			}()
		}
		wg.Wait()
	}
	checkPeakRSSUnder(t, d, 200<<20)
}
