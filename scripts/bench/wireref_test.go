package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRunWireRef_EveryEventArrives(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "h2"}[h2], func(t *testing.T) {
			testRunWireRef(t, h2)
		})
	}
}

func testRunWireRef(t *testing.T, h2 bool) {
	const watchers, rate = 3, 50
	run, err := runWireRef(context.Background(), watchers, rate, time.Second, "ns1", 1024, h2, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run.sent+run.skipped, int64(rate); got != want {
		t.Errorf("sent %d + skipped %d = %d, want %d scheduled", run.sent, run.skipped, got, want)
	}
	if run.sent == 0 {
		t.Fatal("no event sent")
	}
	if got, want := run.h2Streams, map[bool]int64{false: 0, true: watchers}[h2]; got != want {
		t.Errorf("%d watches came as HTTP/2 streams, want %d", got, want)
	}
	if run.connected != watchers || run.failed != 0 || run.writeErrs != 0 || run.closedEarly != 0 {
		t.Errorf("connected %d, failed %d, write errors %d, closed early %d; want %d, 0, 0, 0",
			run.connected, run.failed, run.writeErrs, run.closedEarly, watchers)
	}
	for i, w := range run.ws {
		if got := w.events.Load(); got != run.sent {
			t.Errorf("watcher %d got %d events, want %d", i, got, run.sent)
		}
		if got := int64(w.hist.n); got != run.sent {
			t.Errorf("watcher %d has %d latencies, want %d", i, got, run.sent)
		}
		if o := w.other.Load(); o != 0 {
			t.Errorf("watcher %d got %d lines without a send time", i, o)
		}
	}
}

func TestWireRefEvent_Append(t *testing.T) {
	line := newWireRefEvent("ns1", 1024).append(nil, 17, 1700000000123456789)
	if !strings.HasSuffix(string(line), "}\n") || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("line %q is not one JSON line", line)
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct {
				Name        string            `json:"name"`
				Namespace   string            `json:"namespace"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		} `json:"object"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("decode %s: %v", line, err)
	}
	m := ev.Object.Metadata
	if ev.Type != "ADDED" || m.Name != "w-17" || m.Namespace != "ns1" || len(ev.Object.Data["payload"]) != 1024 ||
		m.Annotations[sentAnnotation] != "1700000000123456789" {
		t.Errorf("event decoded to %+v", ev)
	}
	if got := parseSent(line); got != 1700000000123456789 {
		t.Errorf("parseSent = %d, want 1700000000123456789", got)
	}
	if i := strings.Index(string(line), sentAnnotation); i < sentFrom || i > sentTo {
		t.Errorf("send time at byte %d, outside parseSent's first window [%d, %d)", i, sentFrom, sentTo)
	}
}

func TestWatchRefRatios(t *testing.T) {
	results := []Result{
		{Workload: "watch-100w-500/s", Clients: 100, Ops: 100 * 5000, Seconds: 10, Latency: &Latency{P99MS: 12}},
		{Workload: "watch-writer", Latency: &Latency{P99MS: 3}},
		{Workload: "watch-ref-100x500", Clients: 100, Ops: 100 * 4000, Seconds: 10, Latency: &Latency{P99MS: 8}},
		{Workload: "watch-1000w-1000/s", Latency: &Latency{P99MS: 50}}, // no reference of its size
		{Workload: "watch-100w-500/s tls-h2", Latency: &Latency{P99MS: 20}},
		{Workload: "watch-100w-500/s clientgo", Latency: &Latency{P99MS: 30}},
		{Workload: "watch-ref-h2-100x500", Latency: &Latency{P99MS: 10}},
	}
	got := watchRefRatios(results)
	if len(got) != 3 {
		t.Fatalf("got %d ratios (%+v), want 3", len(got), got)
	}
	for i, want := range []struct {
		name  string
		value float64
	}{{"watch-p99/ref-h2-100x500", 2}, {"watch-p99/ref-h2-100x500", 3}} {
		if g := got[i+1]; g.Workload != want.name || g.Value != want.value {
			t.Errorf("HTTP/2 ratio %d = %s %v, want %s %v (against watch-ref-h2)", i, g.Workload, g.Value, want.name, want.value)
		}
	}
	if got[0].Workload != "watch-p99/ref-100x500" || got[0].Value != 1.5 || got[0].Unit != "×" {
		t.Errorf("ratio = %+v, want watch-p99/ref-100x500 1.5 ×", got[0])
	}
	notes := strings.Join(got[0].Notes, "; ")
	if !strings.Contains(notes, "NOT COMPARABLE: watch-ref-100x500 delivered 4000 events per watcher of the 5000") ||
		strings.Contains(notes, "watch-100w-500/s delivered") {
		t.Errorf("notes %q: want only the reference flagged as behind the rate", notes)
	}
}
