package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Reference numbers for the change-log workloads (edgeapi's goals).
const (
	targetResume     = "≥50,000 events/s"
	targetPagedList  = "≤3 s"
	targetCompaction = "max write latency ≤50 ms"
)

// DefaultResumeTimeout bounds the catch-up of the watch-resume workload.
const DefaultResumeTimeout = 5 * time.Minute

// bulkNamespace is a namespace holding --bulk-objects ConfigMaps, created
// by the first workload that needs it (watch-resume, paged-list) and shared
// by the rest of the run.
type bulkNamespace struct {
	ns string
	// revBefore is the revision just before the objects were created: a
	// watch from it replays every one of their ADDED events.
	revBefore string
	n         int
}

// bulk returns the run's bulk namespace, creating its objects on first use.
func (b *bench) bulk(ctx context.Context) (*bulkNamespace, error) {
	if b.bulkNS != nil {
		return b.bulkNS, nil
	}
	n := b.cfg.bulkObjects
	ns := "bench-bulk-" + b.runID
	if err := b.c.ensureNamespace(ctx, ns); err != nil {
		return nil, err
	}
	code, body, err := b.c.doSimple(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?limit=1", "")
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("list %s: HTTP %d %v", ns, code, err)
	}
	rv := resourceVersionOf(body)
	if rv == nil {
		return nil, errors.New("list: no metadata.resourceVersion")
	}
	b.logf("bulk: creating %d ConfigMaps in %s (64 clients)", n, ns)
	rate, err := b.seedConfigMaps(ctx, ns, "b-", n, 64)
	if err != nil {
		return nil, fmt.Errorf("seed %s: %w", ns, err)
	}
	b.logf("bulk: created at %.0f/s", rate)
	b.bulkNS = &bulkNamespace{ns: ns, revBefore: string(rv), n: n}
	return b.bulkNS, nil
}

// runWatchResume watches the bulk namespace from the revision before its
// --bulk-objects creates, so the daemon must replay them all; with more
// events than its ring holds (10,000 events / 64 MiB by default) most come
// from the change log. The result is the catch-up rate in events/s.
func runWatchResume(ctx context.Context, b *bench) ([]Result, error) {
	bn, err := b.bulk(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultResumeTimeout)
	defer cancel()
	m := b.beginMeasure(ctx)
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		configMapsURL(b.base, bn.ns)+"?watch=1&resourceVersion="+bn.revBefore, nil)
	req.Header = hdrJSON
	resp, err := b.c.tr.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("watch: HTTP %d", resp.StatusCode)
	}
	headers := time.Since(start)
	br := bufio.NewReaderSize(resp.Body, DefaultIOBufferBytes)
	added := []byte(`{"type":"ADDED"`)
	var events, other int64
	var first time.Duration
	var errLine string
	for events < int64(bn.n) {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: read on to its end.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		switch {
		case bytes.HasPrefix(line, added):
			if events == 0 {
				first = time.Since(start)
			}
			events++
		case len(bytes.TrimSpace(line)) > 0:
			other++
			if bytes.Contains(line, errorEvent) && errLine == "" {
				errLine = string(line[:min(len(line), 300)])
			}
		}
		if err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	r := Result{Workload: "watch-resume-" + shortCount(bn.n), Clients: 1, Ops: events,
		Seconds: elapsed.Seconds(), OpsPerSec: float64(events) / elapsed.Seconds(), Target: targetResume}
	m.end(ctx, &r)
	r.note("watch from resourceVersion=%s: %d of %d ADDED events in %s (headers after %s, first event after %s); %d other lines",
		bn.revBefore, events, bn.n, elapsed.Round(time.Millisecond), headers.Round(time.Millisecond), first.Round(time.Millisecond), other)
	if events < int64(bn.n) {
		r.Errors = int64(bn.n) - events
		r.ErrSample = errLine
		if r.ErrSample == "" {
			r.ErrSample = fmt.Sprintf("stream ended after %d events", events)
		}
	}
	b.logResult(r)
	return []Result{r}, nil
}

// runPagedList lists the bulk namespace --paged-lists times, each time
// page by page at --page-limit objects per request following the continue
// tokens; one operation is the whole paged list.
func runPagedList(ctx context.Context, b *bench) ([]Result, error) {
	bn, err := b.bulk(ctx)
	if err != nil {
		return nil, err
	}
	wi := b.w()
	if err := wi.ensure(ctx, b, bn.ns); err != nil {
		return nil, err
	}
	base := configMapsURL(wi.base, bn.ns) + fmt.Sprintf("?limit=%d", b.cfg.pageLimit)

	// One untimed pass decodes every page: it checks the count and warms
	// up.
	items, pages, err := b.pagedListChecked(ctx, wi, base)
	if err != nil {
		return nil, err
	}

	r, err := b.runLoop(ctx, loopSpec{
		name:     fmt.Sprintf("paged-list-%s-by-%d", shortCount(bn.n), b.cfg.pageLimit),
		clients:  1,
		duration: b.cfg.duration * 30, // bounded by count
		maxOps:   int64(b.cfg.pagedLists),
		op: func(ctx context.Context, w *worker) error {
			next := base
			for range pages + 1 {
				if _, err := wi.read(ctx, next, &w.sink); err != nil {
					return err
				}
				cont := continueOfAny(w.sink.Bytes())
				if cont == "" {
					return nil
				}
				next = base + "&continue=" + url.QueryEscape(cont)
			}
			return fmt.Errorf("more than the %d pages of the checked pass", pages)
		},
	})
	if err != nil {
		return nil, err
	}
	r.Target = targetPagedList
	r.note("one op = %d pages of ≤%d, %d items (checked in an untimed pass)", pages, b.cfg.pageLimit, items)
	if items != bn.n {
		r.note("WARNING: expected %d items, got %d", bn.n, items)
	}
	b.logResult(r)
	return []Result{r}, nil
}

// pagedListChecked lists base page by page, decoding each page, and
// returns the number of items and pages.
func (b *bench) pagedListChecked(ctx context.Context, wi *wire, base string) (items, pages int, err error) {
	next := base
	var sink bytes.Buffer
	for pages = 1; pages <= 1_000_000; pages++ {
		if _, err := wi.read(ctx, next, &sink); err != nil {
			return items, pages, fmt.Errorf("page %d: %w", pages, err)
		}
		list, err := decodeList(sink.Bytes())
		if err != nil {
			return items, pages, fmt.Errorf("page %d: decode: %w", pages, err)
		}
		items += list.items
		if got := continueOfAny(sink.Bytes()); got != list.cont {
			return items, pages, fmt.Errorf("page %d: continue found by search %q, decoded %q", pages, got, list.cont)
		}
		if list.cont == "" {
			return items, pages, nil
		}
		next = base + "&continue=" + url.QueryEscape(list.cont)
	}
	return items, pages, errors.New("too many pages")
}

var continueKey = []byte(`"continue":"`)

// continueOf returns a list's metadata.continue, found by a byte search in
// the part before its items, or "".
func continueOf(b []byte) string {
	head := b
	if i := bytes.Index(b, []byte(`"items":`)); i >= 0 {
		head = b[:i]
	}
	i := bytes.Index(head, continueKey)
	if i < 0 {
		return ""
	}
	rest := head[i+len(continueKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
