// Command unixclient sends HTTP requests to edgeapi's Unix socket, one
// after the other on one kept-alive connection, for the e2e tests that run
// it as another Unix user (the test binary and its directory are not
// theirs to run).
//
//	unixclient SOCKET 'GET /api/v1/namespaces' 'POST /apis/... {"json":1}' ...
//
// Each request is "METHOD PATH" or "METHOD PATH BODY" (a JSON body). It
// prints one JSON line per response ({"status":403,"body":"..."}, the
// body read to its end, watches included) and then {"dials":N}, the number
// of connections it opened. It exits 1 when a request fails to get a
// response.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: unixclient SOCKET 'METHOD PATH [BODY]'...")
		os.Exit(2)
	}
	socket := os.Args[1]
	var dials atomic.Int32
	client := &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				dials.Add(1)
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
		},
	}
	enc := json.NewEncoder(os.Stdout)
	for _, spec := range os.Args[2:] {
		parts := strings.SplitN(spec, " ", 3)
		if len(parts) < 2 {
			fmt.Fprintf(os.Stderr, "unixclient: bad request %q: want \"METHOD PATH [BODY]\"\n", spec)
			os.Exit(2)
		}
		var body io.Reader
		if len(parts) == 3 {
			body = strings.NewReader(parts[2])
		}
		req, err := http.NewRequest(parts[0], "http://localhost"+parts[1], body)
		if err != nil {
			fmt.Fprintf(os.Stderr, "unixclient: %v\n", err)
			os.Exit(2)
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(os.Stderr, "unixclient: %s %s: %v\n", parts[0], parts[1], err)
			os.Exit(1)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "unixclient: %s %s: read body: %v\n", parts[0], parts[1], err)
			os.Exit(1)
		}
		enc.Encode(map[string]any{"status": resp.StatusCode, "body": string(b)})
	}
	enc.Encode(map[string]any{"dials": dials.Load()})
}
