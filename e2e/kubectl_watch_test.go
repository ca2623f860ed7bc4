package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlStream is a kubectl process running in the background whose
// stdout is read line by line.
type kubectlStream struct {
	t      *testing.T
	args   []string
	lines  chan string
	stderr *bytes.Buffer
	cancel context.CancelFunc
	done   chan struct{}
}

// startKubectl runs kubectl against d in the background until the test
// ends (or a hang-guard deadline).
func startKubectl(t *testing.T, d *Daemon, args ...string) *kubectlStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	full := append([]string{"--kubeconfig", d.Kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, kubectlBin.Path(t), full...)
	cmd.Env = append(os.Environ(), "HOME="+d.home, "KUBECONFIG=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &kubectlStream{t: t, args: args, lines: make(chan string, 1000), stderr: &bytes.Buffer{}, cancel: cancel, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kubectl %v: %v", args, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// Next returns kubectl's next output line split into fields.
func (s *kubectlStream) Next() []string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			<-s.done
			s.t.Fatalf("kubectl %v exited; stderr:\n%s", s.args, s.stderr)
		}
		return strings.Fields(l)
	case <-time.After(watchHang):
		s.t.Fatalf("kubectl %v: no output line within %v", s.args, watchHang)
		return nil
	}
}

var ageRE = regexp.MustCompile(`^(\d+[smhd])+$|^<unknown>$`)

// wantRow checks one output row: fields before the last must equal want;
// the last is an AGE.
func (s *kubectlStream) wantRow(want ...string) {
	s.t.Helper()
	got := s.Next()
	if len(got) != len(want)+1 || strings.Join(got[:len(got)-1], " ") != strings.Join(want, " ") || !ageRE.MatchString(got[len(got)-1]) {
		s.t.Errorf("kubectl %v: got row %q, want %q followed by an AGE", s.args, got, want)
	}
}

func (s *kubectlStream) wantHeader(want ...string) {
	s.t.Helper()
	if got := s.Next(); strings.Join(got, " ") != strings.Join(want, " ") {
		s.t.Errorf("kubectl %v: got header %q, want %q", s.args, got, want)
	}
}

// TestKubectl_GetWatch runs `kubectl get cm -w` and `kubectl get cm -w
// --output-watch-events` and checks that they print the current ConfigMaps
// and then a line per change.
func TestKubectl_GetWatch(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	for _, withEvents := range []bool{false, true} {
		ns := "kwatch"
		args := []string{"get", "cm", "-w"}
		if withEvents {
			ns = "kwatch-events"
			args = append(args, "--output-watch-events")
		}
		t.Run(strings.Join(args[2:], ""), func(t *testing.T) {
			createNamespace(t, cs, ns)
			cms := cs.CoreV1().ConfigMaps(ns)
			for _, n := range []string{"b", "a"} {
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			k := startKubectl(t, d, append(args, "-n", ns)...)
			ev := func(typ string, row ...string) []string {
				if withEvents {
					return append([]string{typ}, row...)
				}
				return row
			}
			if withEvents {
				k.wantHeader("EVENT", "NAME", "DATA", "AGE")
			} else {
				k.wantHeader("NAME", "DATA", "AGE")
			}
			k.wantRow(ev("ADDED", "a", "1")...)
			k.wantRow(ev("ADDED", "b", "1")...)

			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			k.wantRow(ev("ADDED", "c", "0")...)

			a, err := cms.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a.Data = map[string]string{"k": "v", "k2": "v2", "k3": "v3"}
			if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			k.wantRow(ev("MODIFIED", "a", "3")...)

			if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			k.wantRow(ev("DELETED", "b", "1")...)
		})
	}
}

// TestKubectl_GetChunkSize lists seven ConfigMaps with --chunk-size=2:
// kubectl pages through them (four requests with limit=2) and prints all
// seven, with one header.
func TestKubectl_GetChunkSize(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	const ns = "chunks"
	createNamespace(t, cs, ns)
	createConfigMaps(t, cs, ns, "cm-", 7)

	res := d.MustKubectl("get", "cm", "-n", ns, "--chunk-size=2", "-v=6")
	rows := table(res.Stdout)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r[:len(r)-1], " "))
	}
	want := []string{"NAME DATA"}
	for i := 0; i < 7; i++ {
		want = append(want, fmt.Sprintf("cm-%04d 1", i))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kubectl get cm --chunk-size=2:\ngot\n%s\nwant (without AGE)\n%s", res.Stdout, strings.Join(want, "\n"))
	}
	if n := strings.Count(res.Stderr, "limit=2"); n != 4 {
		t.Errorf("kubectl made %d requests with limit=2, want 4 (pages of 2, 2, 2, 1):\n%s", n, res.Stderr)
	}
	if n := strings.Count(res.Stderr, "continue="); n != 3 {
		t.Errorf("kubectl made %d requests with a continue token, want 3:\n%s", n, res.Stderr)
	}

	res = d.MustKubectl("get", "cm", "-n", ns, "--chunk-size=2", "-o", "name")
	var names []string
	for i := 0; i < 7; i++ {
		names = append(names, fmt.Sprintf("configmap/cm-%04d", i))
	}
	if got := strings.TrimSpace(res.Stdout); got != strings.Join(names, "\n") {
		t.Errorf("kubectl get cm --chunk-size=2 -o name:\ngot\n%s\nwant\n%s", got, strings.Join(names, "\n"))
	}
}
