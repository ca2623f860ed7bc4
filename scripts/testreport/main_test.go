package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// run is a `go test -json` stream of one package with a passing, a failing
// and a skipped test.
const run = `{"Action":"start","Package":"example.com/p"}
{"Action":"run","Package":"example.com/p","Test":"TestA"}
{"Action":"output","Package":"example.com/p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"example.com/p","Test":"TestA","Elapsed":0}
{"Action":"run","Package":"example.com/p","Test":"TestB"}
{"Action":"output","Package":"example.com/p","Test":"TestB","Output":"    b_test.go:1: broken\n"}
{"Action":"output","Package":"example.com/p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"example.com/p","Test":"TestB","Elapsed":0}
{"Action":"skip","Package":"example.com/p","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"example.com/p","Output":"FAIL\texample.com/p\t0.500s\n"}
{"Action":"fail","Package":"example.com/p","Elapsed":0.5}
`

// TestRelabel: every package name gets the label, also in go test's
// summary line of the package; the other fields and lines that are not
// JSON stay as they were.
func TestRelabel(t *testing.T) {
	in := run + "go: downloading example.com/q v1.0.0\n" +
		`{"ImportPath":"example.com/q [example.com/q.test]","Action":"build-fail"}` + "\n" +
		`{"Action":"fail","Package":"example.com/q","FailedBuild":"example.com/q [example.com/q.test]"}` + "\n"
	var out bytes.Buffer
	if err := relabel(strings.NewReader(in), &out, "etcd"); err != nil {
		t.Fatal(err)
	}
	inLines, outLines := strings.Split(in, "\n"), strings.Split(out.String(), "\n")
	if len(outLines) != len(inLines) {
		t.Fatalf("relabel: got %d lines, want %d:\n%s", len(outLines), len(inLines), out.String())
	}
	for i, got := range outLines {
		var before, after map[string]any
		if json.Unmarshal([]byte(inLines[i]), &before) != nil {
			if got != inLines[i] {
				t.Errorf("line %d: got %q, want it unchanged: %q", i, got, inLines[i])
			}
			continue
		}
		if err := json.Unmarshal([]byte(got), &after); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, got)
		}
		for k, v := range before {
			want := v
			if k == "Package" || k == "ImportPath" || k == "FailedBuild" {
				want = v.(string) + " (etcd)"
			}
			if k == "Output" && v == "FAIL\texample.com/p\t0.500s\n" {
				want = "FAIL\texample.com/p (etcd)\t0.500s\n"
			}
			if after[k] != want {
				t.Errorf("line %d: %s: got %q, want %q", i, k, after[k], want)
			}
		}
		if len(after) != len(before) {
			t.Errorf("line %d: got fields %v, want %v", i, after, before)
		}
	}
}

// TestReport_labels: a run and its relabelled copy are counted together
// and each on its own line, and the failures of the labelled run are named
// with their label.
func TestReport_labels(t *testing.T) {
	var labelled bytes.Buffer
	if err := relabel(strings.NewReader(run), &labelled, "etcd"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := newReport(&out, "sqlite")
	if err := r.read(strings.NewReader(run + labelled.String())); err != nil {
		t.Fatal(err)
	}
	if got := r.summarize(); got != 1 {
		t.Errorf("summarize: got exit code %d, want 1", got)
	}
	report := out.String()
	for _, want := range []string{
		"FAIL\texample.com/p\t0.500s\n",
		"FAIL\texample.com/p (etcd)\t0.500s\n",
		"FAILED TEST example.com/p.TestB\n",
		"FAILED TEST example.com/p.TestB (etcd)\n",
		"FAILED PACKAGE example.com/p (etcd)\n",
		"tests (sqlite): 1 passed, 1 failed, 1 skipped\ntests (etcd): 1 passed, 1 failed, 1 skipped\ntests: 2 passed, 2 failed, 2 skipped\n",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if !strings.HasSuffix(report, "tests: 2 passed, 2 failed, 2 skipped\n") {
		t.Errorf("report does not end with the total:\n%s", report)
	}
}

// TestReport_oneRun: without labels the summary has the total only.
func TestReport_oneRun(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, "sqlite")
	if err := r.read(strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	r.summarize()
	if got := out.String(); strings.Contains(got, "tests (") || !strings.HasSuffix(got, "\ntests: 1 passed, 1 failed, 1 skipped\n") {
		t.Errorf("report:\n%s\nwant the total only, last", got)
	}
}
