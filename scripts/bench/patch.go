package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Reference numbers for the patch workloads (edgeapi's goals; nothing
// asserts them).
const (
	targetApply16 = "≥3,000/s"
	targetPatch16 = "≥5,000/s"
)

// runApply is server-side apply: each of --apply-clients managers applies
// its own ~1 KiB ConfigMap over and over, with a counter in its data that
// changes every time, as PATCH application/apply-patch+yaml with its own
// fieldManager. Each manager's first apply (which creates the object) runs
// before the clock starts.
func runApply(ctx context.Context, b *bench) ([]Result, error) {
	wi := b.w()
	if err := wi.ensure(ctx, b, benchNamespace); err != nil {
		return nil, err
	}
	clients := b.cfg.applyClients
	prefix := "apply" + strings.TrimSpace(wi.name) + "-" + b.runID + "-"
	tmpl := newConfigMapBody(benchNamespace, b.cfg.payloadBytes)
	urls := make([]string, clients)
	for i := range urls {
		urls[i] = configMapsURL(wi.base, benchNamespace) + "/" + prefix + strconv.Itoa(i) +
			"?fieldManager=bench-manager-" + strconv.Itoa(i)
	}
	op := func(ctx context.Context, w *worker) error {
		body := w.nextBody()
		w.buf = tmpl.appendApply(w.buf[:0], w.name, w.seq)
		w.seq++
		body.set(w.buf)
		_, _, err := wi.c.doHeader(ctx, "PATCH", urls[w.id], wi.apply, body, &w.sink)
		return err
	}
	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("apply-%d", clients),
		clients:  clients,
		duration: b.cfg.duration,
		maxOps:   b.cfg.maxOps,
		setup: func(ctx context.Context, w *worker) error {
			w.name = prefix + strconv.Itoa(w.id)
			return op(ctx, w)
		},
		op: op,
	})
	if err != nil {
		return nil, err
	}
	if clients == 16 {
		r.Target = targetApply16
	}
	r.note("server-side apply of a %d-byte payload, one manager and object per client", b.cfg.payloadBytes)
	b.logResult(r)
	return []Result{r}, nil
}

// runPatch is JSON merge PATCH: each of --patch-clients clients sets a
// counter in its own ConfigMap's data.
func runPatch(ctx context.Context, b *bench) ([]Result, error) {
	clients := b.cfg.patchClients
	wi := b.w()
	prefix := "patch" + strings.TrimSpace(wi.name) + "-" + b.runID + "-"
	if _, err := b.seedConfigMaps(ctx, benchNamespace, prefix, clients, clients); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if err := wi.ensure(ctx, b, benchNamespace); err != nil {
		return nil, err
	}
	urls := make([]string, clients)
	for i := range urls {
		urls[i] = configMapsURL(wi.base, benchNamespace) + "/" + prefix + strconv.Itoa(i)
	}
	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("patch-%d", clients),
		clients:  clients,
		duration: b.cfg.duration,
		maxOps:   b.cfg.maxOps,
		op: func(ctx context.Context, w *worker) error {
			body := w.nextBody()
			w.buf = appendMergePatch(w.buf[:0], w.seq)
			w.seq++
			body.set(w.buf)
			_, _, err := wi.c.doHeader(ctx, "PATCH", urls[w.id], wi.merge, body, &w.sink)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if clients == 16 {
		r.Target = targetPatch16
	}
	r.note("merge patch of one data key of a %d-byte ConfigMap, one object per client", b.cfg.payloadBytes)
	b.logResult(r)
	return []Result{r}, nil
}
