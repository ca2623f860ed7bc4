package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// The CustomResourceDefinition workloads measure what issue 10 sets
// targets for: the RSS cost of many CRDs, how fast a burst of them is
// established, discovery with them, and custom resource creates and
// LISTs against ConfigMaps of the same size in the same run.

// benchCRDFields is how many spec fields the custom resource workloads'
// schema has (each with a description, a type, limits and a nested
// object). The crds workload takes its count from --crd-fields.
const benchCRDFields = 40

// crdSchema returns an openAPIV3Schema with the given number of spec
// fields (about 260 bytes each) and a status.
func crdSchema(fields int, rules bool) map[string]any {
	props := map[string]any{}
	for i := range fields {
		name := fmt.Sprintf("field%02d", i)
		switch i % 4 {
		case 0:
			props[name] = map[string]any{"type": "string", "maxLength": 253, "description": strings.Repeat("A string setting of the operator, as its documentation describes it. ", 3)}
		case 1:
			props[name] = map[string]any{"type": "integer", "minimum": 0, "maximum": 65535, "description": strings.Repeat("A numeric setting with bounds checked by the schema. ", 3)}
		case 2:
			props[name] = map[string]any{"type": "array", "maxItems": 16, "items": map[string]any{"type": "string", "maxLength": 63}, "description": strings.Repeat("A list of names. ", 6)}
		default:
			props[name] = map[string]any{"type": "object", "description": strings.Repeat("A nested block of settings. ", 5), "properties": map[string]any{
				"enabled": map[string]any{"type": "boolean", "default": false},
				"mode":    map[string]any{"type": "string", "enum": []string{"auto", "manual", "off"}},
				"limit":   map[string]any{"type": "integer", "minimum": 1},
			}}
		}
	}
	spec := map[string]any{"type": "object", "properties": props}
	if rules {
		props["notes"] = map[string]any{"type": "string", "description": "Free text: the bulk of each object."}
		spec["x-kubernetes-validations"] = []any{
			map[string]any{"rule": "self.field01 <= 60000", "message": "field01 must be at most 60000"},
			map[string]any{"rule": "!has(self.field00) || self.field00.size() > 0", "message": "field00 must not be empty"},
		}
	}
	return map[string]any{"type": "object", "properties": map[string]any{
		"spec":   spec,
		"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
	}}
}

// crdBody is a namespaced CRD of group g and plural p with the schema.
func crdBody(group, plural, kind string, schema map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": schema}}},
		},
	})
	return b
}

// waitEstablished polls the CRD list until want CRDs with names starting
// with prefix are Established, and returns when that happened.
func (b *bench) waitEstablished(ctx context.Context, suffix string, want int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		code, body, err := b.c.doSimple(ctx, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "")
		if err != nil || code != 200 {
			return fmt.Errorf("list crds: %d %v", code, err)
		}
		var list struct {
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
				Status   struct {
					Conditions []struct{ Type, Status string } `json:"conditions"`
				} `json:"status"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return err
		}
		n := 0
		for _, it := range list.Items {
			if !strings.HasSuffix(it.Metadata.Name, suffix) {
				continue
			}
			for _, c := range it.Status.Conditions {
				if c.Type == "Established" && c.Status == "True" {
					n++
				}
			}
		}
		if n >= want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%d CRDs not established after 5 minutes", want)
}

// watchEstablished watches CRDs from resourceVersion rv and reports on
// the channel once want CRDs with names ending in suffix have been seen
// Established (or the watch failed). It watches rather than polls: a LIST
// of hundreds of CRDs of 11 KB every few milliseconds took more CPU from
// the daemon and this tool, on the same two cores, than the work it
// waited for.
func (b *bench) watchEstablished(ctx context.Context, suffix, rv string, want int) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- b.countEstablished(ctx, suffix, rv, want)
	}()
	return done
}

func (b *bench) countEstablished(ctx context.Context, suffix, rv string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		b.base+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=1&resourceVersion="+rv, nil)
	req.Header = hdrJSON
	resp, err := b.c.tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("watch crds: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch crds: HTTP %d", resp.StatusCode)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, DefaultIOBufferBytes))
	established := map[string]bool{}
	for len(established) < want {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct{ Name string } `json:"metadata"`
				Status   struct {
					Conditions []struct{ Type, Status string } `json:"conditions"`
				} `json:"status"`
			} `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return fmt.Errorf("watch crds: %d of %d established: %w", len(established), want, err)
		}
		if ev.Type == "ERROR" {
			return fmt.Errorf("watch crds: error event")
		}
		if !strings.HasSuffix(ev.Object.Metadata.Name, suffix) {
			continue
		}
		for _, c := range ev.Object.Status.Conditions {
			if c.Type == "Established" && c.Status == "True" {
				established[ev.Object.Metadata.Name] = true
			}
		}
	}
	return nil
}

// crdListRV returns the resourceVersion of the CRD list: a watch from it
// sees every later change.
func (b *bench) crdListRV(ctx context.Context) (string, error) {
	code, body, err := b.c.doSimple(ctx, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=1", "")
	if err != nil || code != 200 {
		return "", fmt.Errorf("list crds: %d %v", code, err)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", err
	}
	return list.Metadata.ResourceVersion, nil
}

// runCRDs posts --crds CRDs at once (--crd-fields fields each: 76 make
// a CRD of about 20 KB), and
// measures the time until all are Established, the RSS they add, and
// discovery with them.
func runCRDs(ctx context.Context, b *bench) ([]Result, error) {
	n := b.cfg.crds
	group := "bench-" + b.runID + ".example.com"
	schema := crdSchema(b.cfg.crdFields, false)
	one := crdBody(group, "things0", "Thing0", schema)
	rv, err := b.crdListRV(ctx)
	if err != nil {
		return nil, err
	}
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	allEstablished := b.watchEstablished(waitCtx, "."+group, rv, n)
	rssBefore, haveRSS := b.rss()
	// The server's CPU time for the burst: posting, then establishing.
	var cpu [3]time.Duration
	haveCPU := b.pid > 0
	if haveCPU {
		cpu[0], _ = cpuTime(b.pid)
	}
	start := time.Now()
	err = fanOut(ctx, n, 64, func(ctx context.Context, i int) error {
		body := crdBody(group, fmt.Sprintf("things%d", i), fmt.Sprintf("Thing%d", i), schema)
		code, resp, err := b.c.doSimple(ctx, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", string(body))
		if err != nil || (code != 201 && code != 409) {
			return fmt.Errorf("create crd %d: %d %v %.200s", i, code, err, resp)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	posted := time.Since(start)
	if haveCPU {
		cpu[1], _ = cpuTime(b.pid)
	}
	if err := <-allEstablished; err != nil {
		return nil, err
	}
	established := time.Since(start)
	if haveCPU {
		cpu[2], _ = cpuTime(b.pid)
	}
	var out []Result
	r := Result{Workload: fmt.Sprintf("crds-%d-established", n), Value: established.Seconds(), Unit: "s", Target: "700 CRDs established ≤10 s"}
	r.note("%d CRDs of %.1f KB schema posted on 64 clients in %.2f s; all Established after %.2f s", n, float64(len(one))/1000, posted.Seconds(), established.Seconds())
	if haveCPU {
		r.note("server CPU %.2f s (posting %.2f s)", (cpu[2] - cpu[0]).Seconds(), (cpu[1] - cpu[0]).Seconds())
	}
	out = append(out, r)
	b.logResult(r)

	if haveRSS {
		time.Sleep(2 * time.Second) // let the collector settle
		after, _ := b.rss()
		rr := Result{Workload: fmt.Sprintf("crds-%d-rss", n), Value: after - rssBefore, Unit: "MiB", Target: "500 CRDs ≤100 MB"}
		rr.note("RSS %.1f → %.1f MiB: %.0f KiB per CRD", rssBefore, after, (after-rssBefore)*1024/float64(n))
		out = append(out, rr)
		b.logResult(rr)
	}

	// Discovery with the CRDs: the aggregated document client-go asks
	// for first, and the group list.
	for _, d := range []struct{ name, path, accept string }{
		{"discovery-aggregated", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"},
		{"discovery-groups", "/apis", "application/json"},
	} {
		hdr := http.Header{"Accept": {d.accept}}
		rd, err := b.runLoop(ctx, loopSpec{
			name: fmt.Sprintf("%s-%dcrds", d.name, n), clients: 1, duration: b.cfg.duration, maxOps: 200,
			op: func(ctx context.Context, w *worker) error {
				_, nb, err := b.c.doHeader(ctx, "GET", b.base+d.path, hdr, nil, &w.sink)
				w.bytes = nb
				return err
			},
		})
		if err != nil {
			return out, err
		}
		rd.Target = "<50 ms with 500 CRDs"
		out = append(out, rd)
		b.logResult(rd)
	}
	return out, nil
}

// crBody appends a custom resource of the 20-field schema with two CEL
// rules, sized like the ConfigMaps of the create workload.
func crBody(dst []byte, group, name string, payload int) []byte {
	dst = append(dst, `{"apiVersion":"`...)
	dst = append(dst, group...)
	dst = append(dst, `/v1","kind":"Gadget","metadata":{"name":"`...)
	dst = append(dst, name...)
	dst = append(dst, `"},"spec":{"notes":"`...)
	dst = append(dst, strings.Repeat("x", max(payload-200, 1))...)
	dst = append(dst, `","field00":"a","field01":8080,"field02":["a","b"],"field03":{"enabled":true,"mode":"auto","limit":3}}}`...)
	return dst
}

// setUpGadgets creates the Gadget CRD (20 fields, two CEL rules) of this
// run and waits for it.
func (b *bench) setUpGadgets(ctx context.Context) (group string, err error) {
	group = "gadgets-" + b.runID + ".example.com"
	body := crdBody(group, "gadgets", "Gadget", crdSchema(20, true))
	code, resp, err := b.c.doSimple(ctx, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", string(body))
	if err != nil || (code != 201 && code != 409) {
		return "", fmt.Errorf("create gadget crd: %d %v %.300s", code, err, resp)
	}
	return group, b.waitEstablished(ctx, "."+group, 1)
}

// runCRCreate creates custom resources (20-field schema, two CEL rules)
// at 64 clients, right after the same for ConfigMaps of the same size.
func runCRCreate(ctx context.Context, b *bench) ([]Result, error) {
	group, err := b.setUpGadgets(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	const clients = 64
	tmpl := newConfigMapBody(benchNamespace, b.cfg.payloadBytes)
	cmURL := configMapsURL(b.base, benchNamespace)
	crURL := b.base + "/apis/" + group + "/v1/namespaces/" + benchNamespace + "/gadgets"
	cm, err := b.postLoop(ctx, "cr-create-configmaps-64", clients, cmURL, "crc-", func(dst []byte, w *worker) []byte {
		return tmpl.appendCreate(dst, w.name, w.seq, 0)
	})
	if err != nil {
		return nil, err
	}
	b.logResult(cm)
	cr, err := b.postLoop(ctx, "cr-create-64", clients, crURL, "g-", func(dst []byte, w *worker) []byte {
		return crBody(dst, group, fmt.Sprintf("%s%d", w.name, w.seq), b.cfg.payloadBytes)
	})
	if err != nil {
		return nil, err
	}
	if cm.OpsPerSec > 0 {
		cr.note("%.0f%% of the ConfigMap create rate in the same run (%.0f/s)", 100*cr.OpsPerSec/cm.OpsPerSec, cm.OpsPerSec)
	}
	cr.Target = "≥70% of the ConfigMap rate"
	b.logResult(cr)
	return []Result{cm, cr}, nil
}

// runCRList lists --list-objects custom resources and as many ConfigMaps
// of the same size, each in a namespace of its own. Both are written at
// the same time, so that their rows are spread alike over the database
// file (written one after the other, the later ones lie beyond the
// readers' 32 MiB memory map and are read with a system call per page,
// which made the second kind slower for reasons of its own). The lists
// are timed warm (right after the writes: every answer the daemon caches
// is cached) and, when this tool runs the daemon, cold: the first LIST of
// each kind after a restart, --cold-lists times; then again after the
// custom resource's schema gained a defaulted field, which every stored
// object lacks.
func runCRList(ctx context.Context, b *bench) ([]Result, error) {
	group, err := b.setUpGadgets(ctx)
	if err != nil {
		return nil, err
	}
	n := b.cfg.listObjects
	cmNS, crNS := "bench-crl-cm-"+b.runID, "bench-crl-cr-"+b.runID
	if err := b.c.ensureNamespace(ctx, crNS); err != nil {
		return nil, err
	}
	crPath := "/apis/" + group + "/v1/namespaces/" + crNS + "/gadgets"
	seeded := make(chan error, 1)
	go func() {
		_, err := b.seedConfigMaps(ctx, cmNS, "l-", n, 32)
		seeded <- err
	}()
	err = fanOut(ctx, n, 32, func(ctx context.Context, i int) error {
		body := crBody(nil, group, fmt.Sprintf("l-%d", i), b.cfg.payloadBytes)
		code, resp, err := b.c.doSimple(ctx, http.MethodPost, crPath, string(body))
		if err != nil || (code != 201 && code != 409) {
			return fmt.Errorf("create gadget %d: %d %v %.200s", i, code, err, resp)
		}
		return nil
	})
	if serr := <-seeded; err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	lists := []struct{ name, url string }{
		{"cr-list-configmaps-" + shortCount(n), configMapsURL(b.base, cmNS)},
		{"cr-list-" + shortCount(n), b.base + crPath},
	}
	var out []Result
	for _, l := range lists {
		var sink bytes.Buffer
		if _, _, err := b.c.do(ctx, "GET", l.url, nil, &sink); err != nil { // warm up
			return out, err
		}
		r, err := b.runLoop(ctx, loopSpec{
			name: l.name, clients: 1, duration: b.cfg.duration * 10, maxOps: int64(b.cfg.lists),
			op: func(ctx context.Context, w *worker) error {
				_, nb, err := b.c.do(ctx, "GET", l.url, nil, &w.sink)
				w.bytes = nb
				return err
			},
		})
		if err != nil {
			return out, err
		}
		r.note("warm: right after the writes; response %.2f MiB; daemon CPU %.0f ms per LIST", float64(sink.Len())/(1<<20), cpuPerOpMS(r))
		out = append(out, r)
	}
	if len(out) == 2 && out[0].Latency != nil && out[1].Latency != nil && out[0].Latency.P50MS > 0 {
		out[1].note("%.2f× the ConfigMap LIST (p50), %.2f× its daemon CPU", out[1].Latency.P50MS/out[0].Latency.P50MS, cpuPerOpMS(out[1])/max(cpuPerOpMS(out[0]), 1e-9))
		out[1].Target = "≤1.5× the ConfigMap LIST"
	}
	for _, r := range out {
		b.logResult(r)
	}
	b.crListResource, b.crListNS = "gadgets."+group, crNS
	if b.d == nil {
		b.logf("cr-list: --server: the cold lists (after a restart) are not measured")
		return out, nil
	}
	ready := b.base + crPath + "?limit=1"
	cold, err := b.coldLists(ctx, "cold", lists[0].url, lists[1].url, ready)
	out = append(out, cold...)
	if err != nil {
		return out, err
	}
	// The schema gains a defaulted field: every stored object was
	// written before it and lacks it, so every read adds it.
	patch := `[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color","value":{"type":"string","default":"blue"}}]`
	code, resp, err := b.c.doPatch(ctx, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets."+group, "application/json-patch+json", patch)
	if err != nil || code != 200 {
		return out, fmt.Errorf("add a default to the gadget schema: %d %v %.300s", code, err, resp)
	}
	cold, err = b.coldLists(ctx, "cold-after-schema-change", lists[0].url, lists[1].url, ready)
	out = append(out, cold...)
	return out, err
}

// coldLists restarts the daemon --cold-lists times and times the first
// LIST of the ConfigMaps (cmURL) and of the custom resources (crURL) after
// each start (and a second's rest), in alternating order, with the
// daemon's CPU for each. ready answers 200 once the custom resource kind
// is served again.
func (b *bench) coldLists(ctx context.Context, label, cmURL, crURL, ready string) ([]Result, error) {
	type sample struct{ wall, cpu []float64 }
	var cm, cr sample
	for round := range b.cfg.coldLists {
		if err := b.d.stop(); err != nil {
			return nil, fmt.Errorf("cold lists: stop: %w", err)
		}
		d, _, err := startDaemon(ctx, b.cfg.bin, b.d.dataDir, b.d.addr, b.cfg.readyTimeout, b.cfg.daemonArgs...)
		if err != nil {
			return nil, fmt.Errorf("cold lists: restart: %w", err)
		}
		b.d, b.pid = d, d.pid()
		b.c.close()
		if err := b.waitOK(ctx, ready); err != nil {
			return nil, err
		}
		// Let the start-up work (controllers' first sync) end: cold
		// means nothing cached, not a busy daemon.
		settle(ctx, time.Second)
		order := []struct {
			url string
			s   *sample
		}{{cmURL, &cm}, {crURL, &cr}}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, o := range order {
			cpu0, _ := cpuTime(b.pid)
			start := time.Now()
			if _, _, err := b.c.do(ctx, "GET", o.url, nil, nil); err != nil {
				return nil, fmt.Errorf("cold list: %w", err)
			}
			wall := time.Since(start)
			cpu1, _ := cpuTime(b.pid)
			o.s.wall = append(o.s.wall, ms(wall))
			o.s.cpu = append(o.s.cpu, ms(cpu1-cpu0))
		}
	}
	n := shortCount(b.cfg.listObjects)
	rcm := Result{Workload: "cr-list-configmaps-" + n + "-" + label, Value: median(cm.wall), Unit: "ms"}
	rcr := Result{Workload: "cr-list-" + n + "-" + label, Value: median(cr.wall), Unit: "ms", Target: "≤1.5× the ConfigMap LIST"}
	for _, x := range []struct {
		r *Result
		s sample
	}{{&rcm, cm}, {&rcr, cr}} {
		x.r.note("first LIST after a restart, median of %d restarts: wall %s ms, daemon CPU %s ms (median %.0f ms)",
			len(x.s.wall), joinMS(x.s.wall), joinMS(x.s.cpu), median(x.s.cpu))
	}
	if rcm.Value > 0 {
		rcr.note("%.2f× the ConfigMap LIST (median wall), %.2f× its daemon CPU", rcr.Value/rcm.Value, median(cr.cpu)/max(median(cm.cpu), 1e-9))
	}
	b.logResult(rcm)
	b.logResult(rcr)
	return []Result{rcm, rcr}, nil
}

// cpuPerOpMS is the daemon's CPU per operation of a timed result, in ms.
func cpuPerOpMS(r Result) float64 {
	if r.Ops == 0 {
		return 0
	}
	return r.ServerCPU * r.Seconds * 1000 / float64(r.Ops)
}

// waitOK polls url until it answers 200, for at most a minute.
func (b *bench) waitOK(ctx context.Context, url string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		code, _, err := b.c.do(ctx, "GET", url, nil, nil)
		if err == nil && code == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not 200 a minute after the restart (%d %v)", url, code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinMS(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, "/")
}

// postLoop POSTs to url on clients workers, each body built by appendBody
// for the worker's name (prefix, the run and the worker) and sequence.
func (b *bench) postLoop(ctx context.Context, name string, clients int, url, prefix string, appendBody func(dst []byte, w *worker) []byte) (Result, error) {
	return b.runLoop(ctx, loopSpec{
		name: name, clients: clients, duration: b.cfg.duration, maxOps: b.cfg.maxOps,
		setup: func(_ context.Context, w *worker) error {
			w.name = fmt.Sprintf("%s%s-%d-", prefix, b.runID, w.id)
			return nil
		},
		op: func(ctx context.Context, w *worker) error {
			body := w.nextBody()
			w.buf = appendBody(w.buf[:0], w)
			w.seq++
			body.set(w.buf)
			_, _, err := b.c.do(ctx, "POST", url, body, &w.sink)
			return err
		},
	})
}
