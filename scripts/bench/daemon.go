package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults for running the daemon.
const (
	// DefaultReadyTimeout bounds the wait for /readyz to answer 200
	// (--ready-timeout).
	DefaultReadyTimeout = 2 * time.Minute
	// DefaultReadyPoll is the /readyz poll interval, and so the resolution
	// of the start-up time.
	DefaultReadyPoll = 2 * time.Millisecond
	// DefaultStopTimeout is how long a SIGTERM'd daemon gets before SIGKILL.
	DefaultStopTimeout = 30 * time.Second
)

// daemon is an edgeapi process this tool started.
type daemon struct {
	bin     string
	dataDir string
	addr    string // 127.0.0.1:PORT
	logPath string

	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{} // closed when cmd.Wait returns
	waitErr error         // set before exited is closed
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// startDaemon runs `bin serve --data-dir dataDir --listen 127.0.0.1:0
// --insecure-listen addr [extra...]` (the figures are of plain HTTP on
// addr; the HTTPS listener is unused),
// logging to <dataDir>.log, and waits for /readyz. It returns the daemon
// and the time from process start to the first 200 from /readyz.
func startDaemon(ctx context.Context, bin, dataDir, addr string, readyTimeout time.Duration, extra ...string) (*daemon, time.Duration, error) {
	return startDaemonEnv(ctx, bin, dataDir, addr, readyTimeout, nil, extra...)
}

// startDaemonEnv is startDaemon with env added to the daemon's
// environment.
func startDaemonEnv(ctx context.Context, bin, dataDir, addr string, readyTimeout time.Duration, env []string, extra ...string) (*daemon, time.Duration, error) {
	d := &daemon{bin: bin, dataDir: dataDir, addr: addr, exited: make(chan struct{})}
	d.logPath = filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+".log")
	f, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open daemon log: %w", err)
	}
	d.logFile = f
	d.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--insecure-listen", addr}, extra...)...)
	d.cmd.Stdout = f
	d.cmd.Stderr = f
	if env != nil {
		d.cmd.Env = append(os.Environ(), env...)
	}
	// Its own process group, so a ^C to the benchmark reaches the daemon
	// only through stop, which waits for a clean shutdown.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	started := time.Now()
	if err := d.cmd.Start(); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	ready, err := d.waitReady(ctx, started, readyTimeout)
	if err != nil {
		_ = d.stop()
		return nil, 0, fmt.Errorf("%w (daemon log %s:%s)", err, d.logPath, tailFile(d.logPath, 20))
	}
	return d, ready, nil
}

// waitReady polls /readyz until it answers 200 and returns the time since
// started; it gives up after timeout.
func (d *daemon) waitReady(ctx context.Context, started time.Time, timeout time.Duration) (time.Duration, error) {
	// A client of its own without keep-alive: each poll is a fresh
	// connection, as a systemd or kubelet probe would be.
	c := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	url := "http://" + d.addr + "/readyz"
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return 0, fmt.Errorf("daemon exited before ready: %v", d.waitErr)
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(started), nil
			}
			lastErr = fmt.Errorf("readyz: HTTP %d", resp.StatusCode)
		} else {
			lastErr = err
		}
		time.Sleep(DefaultReadyPoll)
	}
	return 0, fmt.Errorf("daemon not ready after %s: %v", timeout, lastErr)
}

// stop sends SIGTERM and waits for the daemon to exit, sending SIGKILL
// after DefaultStopTimeout. It returns an error if the daemon had exited
// already, exited with a failure, or had to be killed.
func (d *daemon) stop() error {
	defer d.logFile.Close()
	select {
	case <-d.exited:
		return fmt.Errorf("daemon had already exited: %v", d.waitErr)
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.waitErr != nil {
			return fmt.Errorf("daemon exit: %w", d.waitErr)
		}
		return nil
	case <-time.After(DefaultStopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return errors.New("daemon did not exit on SIGTERM; killed")
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// rssBytes returns VmRSS of process pid from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux we run on.
const clockTicks = 100

// cpuTime returns the user+system CPU time process pid has used, from
// /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed /proc stat times")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// tailFile returns the last n lines of path, each prefixed for display.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n  | " + strings.Join(lines, "\n  | ")
}
