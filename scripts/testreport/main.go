// Command testreport reads `go test -json` on stdin and prints what a plain
// `go test` would (one line per package, the output of failing tests and
// of build failures) followed by a summary that counts tests, not
// packages. It exits 1 if anything failed or no test ran. scripts/test
// uses it.
//
//	testreport -relabel etcd
//
// instead copies `go test -json` from stdin to stdout with " (etcd)"
// appended to every package name, so that one report can hold a second
// run of the same packages (scripts/test's run on the etcd backend): the
// summary then counts each label's tests on a line of its own as well.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), including the
// build events `go test -json` emits since Go 1.24.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// pkgState is what is kept of one package until it finishes: output per
// running test ("" for the package itself).
type pkgState struct {
	output map[string][]string
}

type report struct {
	pkgs                    map[string]*pkgState
	passed, failed, skipped int
	failedTests, failedPkgs []string
	pkgsOK, pkgsNoTests     int
	buildFailed             bool
	// labels counts the tests of each label (relabel's) that was seen;
	// defaultLabel names the packages without one in the summary.
	labels       map[string]*counts
	defaultLabel string
	// out is where the report goes.
	out io.Writer
}

// counts are the tests of one label.
type counts struct{ passed, failed, skipped int }

func main() {
	label := flag.String("relabel", "", "copy go test -json from stdin to stdout with ` (LABEL)` appended to package names, instead of reporting")
	defaultLabel := flag.String("default-label", "unlabelled", "the summary's name for the tests of packages without a label")
	flag.Parse()
	if *label != "" {
		if err := relabel(os.Stdin, os.Stdout, *label); err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			os.Exit(1)
		}
		return
	}
	r := newReport(os.Stdout, *defaultLabel)
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		os.Exit(1)
	}
	os.Exit(r.summarize())
}

// newReport returns an empty report written to out.
func newReport(out io.Writer, defaultLabel string) *report {
	return &report{pkgs: map[string]*pkgState{}, labels: map[string]*counts{}, defaultLabel: defaultLabel, out: out}
}

// read handles the `go test -json` lines of in; other lines go to the
// report as they are.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not from test2json (e.g. a go command message): pass it on.
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.handle(ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test output: %w", err)
	}
	return nil
}

// relabelFields are the fields of a `go test -json` event that name a
// package.
var relabelFields = []string{"Package", "ImportPath", "FailedBuild"}

// relabel copies `go test -json` from in to out with " (label)" appended
// to the package names; lines that are not JSON objects pass unchanged.
func relabel(in io.Reader, out io.Writer, label string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		line := sc.Bytes()
		var ev map[string]json.RawMessage
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			w.Write(line)
			w.WriteByte('\n')
			w.Flush()
			continue
		}
		relabelSummary(ev, label)
		for _, field := range relabelFields {
			var name string
			if raw, ok := ev[field]; !ok || json.Unmarshal(raw, &name) != nil || name == "" {
				continue
			}
			b, err := json.Marshal(name + " (" + label + ")")
			if err != nil {
				return fmt.Errorf("relabel %s: %w", field, err)
			}
			ev[field] = b
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("relabel event: %w", err)
		}
		w.Write(b)
		w.WriteByte('\n')
		// Each event as it comes: the report is read as the tests run.
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test output: %w", err)
	}
	return nil
}

// relabelSummary labels the package in go test's own summary line of a
// package ("ok  \tPKG\t1.2s", "FAIL\tPKG\t3.4s"), an output event
// without a test.
func relabelSummary(ev map[string]json.RawMessage, label string) {
	if _, ok := ev["Test"]; ok {
		return
	}
	var pkg, output string
	if json.Unmarshal(ev["Package"], &pkg) != nil || json.Unmarshal(ev["Output"], &output) != nil || pkg == "" {
		return
	}
	for _, prefix := range []string{"ok  \t", "FAIL\t"} {
		if rest, ok := strings.CutPrefix(output, prefix+pkg); ok && (strings.HasPrefix(rest, "\t") || strings.HasPrefix(rest, "\n")) {
			if b, err := json.Marshal(prefix + pkg + " (" + label + ")" + rest); err == nil {
				ev["Output"] = b
			}
			return
		}
	}
}

// splitLabel splits a package name that relabel made into the package and
// the label ("" when there is none).
func splitLabel(pkg string) (name, label string) {
	if strings.HasSuffix(pkg, ")") {
		if i := strings.LastIndex(pkg, " ("); i >= 0 {
			return pkg[:i], pkg[i+2 : len(pkg)-1]
		}
	}
	return pkg, ""
}

func (r *report) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{output: map[string][]string{}}
		r.pkgs[name] = p
	}
	return p
}

func (r *report) handle(ev event) {
	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.out, ev.Output)
		return
	case "build-fail":
		r.buildFailed = true
		return
	}
	if ev.Package == "" {
		return
	}
	p := r.pkg(ev.Package)
	switch ev.Action {
	case "output":
		p.output[ev.Test] = append(p.output[ev.Test], ev.Output)
	case "pass", "skip", "fail":
		if ev.Test != "" {
			r.finishTest(p, ev)
		} else {
			r.finishPackage(p, ev)
		}
	}
}

func (r *report) finishTest(p *pkgState, ev event) {
	name, label := splitLabel(ev.Package)
	c := r.labels[label]
	if c == nil {
		c = &counts{}
		r.labels[label] = c
	}
	switch ev.Action {
	case "pass":
		r.passed++
		c.passed++
	case "skip":
		r.skipped++
		c.skipped++
	case "fail":
		r.failed++
		c.failed++
		failed := name + "." + ev.Test
		if label != "" {
			failed += " (" + label + ")"
		}
		r.failedTests = append(r.failedTests, failed)
		fmt.Fprint(r.out, strings.Join(p.output[ev.Test], ""))
	}
	delete(p.output, ev.Test)
}

func (r *report) finishPackage(p *pkgState, ev event) {
	defer delete(r.pkgs, ev.Package)
	switch ev.Action {
	case "pass":
		r.pkgsOK++
		fmt.Fprintf(r.out, "ok  \t%s\t%.3fs\n", ev.Package, ev.Elapsed)
	case "skip":
		r.pkgsNoTests++
		fmt.Fprintf(r.out, "?   \t%s\t[no test files]\n", ev.Package)
	case "fail":
		r.failedPkgs = append(r.failedPkgs, ev.Package)
		// Output of tests that never finished (a panic, a timeout), then
		// the package's own output, which ends with "FAIL <pkg>".
		var running []string
		for name := range p.output {
			if name != "" {
				running = append(running, name)
			}
		}
		sort.Strings(running)
		for _, name := range running {
			fmt.Fprint(r.out, strings.Join(p.output[name], ""))
		}
		out := strings.Join(p.output[""], "")
		fmt.Fprint(r.out, out)
		if !strings.Contains(out, "FAIL") {
			fmt.Fprintf(r.out, "FAIL\t%s\n", ev.Package)
		}
	}
}

// summarize prints the summary and returns the exit code.
func (r *report) summarize() int {
	fmt.Fprintln(r.out)
	fmt.Fprintf(r.out, "packages: %d ok, %d failed, %d without tests\n", r.pkgsOK, len(r.failedPkgs), r.pkgsNoTests)
	for _, name := range r.failedTests {
		fmt.Fprintf(r.out, "FAILED TEST %s\n", name)
	}
	for _, name := range r.failedPkgs {
		fmt.Fprintf(r.out, "FAILED PACKAGE %s\n", name)
	}
	code := 0
	switch {
	case r.failed > 0 || len(r.failedPkgs) > 0 || r.buildFailed:
		code = 1
	case r.passed == 0:
		fmt.Fprintln(r.out, "no test ran")
		code = 1
	}
	// With labelled runs, each run's tests on a line of its own, then the
	// total last.
	if len(r.labels) > 1 || r.labels[""] == nil && len(r.labels) > 0 {
		var labels []string
		for label := range r.labels {
			labels = append(labels, label)
		}
		sort.Strings(labels)
		for _, label := range labels {
			c := r.labels[label]
			name := label
			if name == "" {
				name = r.defaultLabel
			}
			fmt.Fprintf(r.out, "tests (%s): %d passed, %d failed, %d skipped\n", name, c.passed, c.failed, c.skipped)
		}
	}
	fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
	return code
}
