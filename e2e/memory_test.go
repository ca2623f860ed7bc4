package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The memory budget under requests that each hold megabytes: many slow
// clients listing a 4 MB collection at once, and many clients sending
// bodies near the 3 MiB limit at once, as system:masters (exempt from the
// in-flight limits, so only the memory budget stands between them and the
// daemon's RSS). Before the LISTs and bodies shared memory gates, 400
// such LISTs took a daemon at --memory-limit 128Mi to 1.1 GiB of RSS, and
// 200 such bodies to 650-770 MiB.

const (
	// memoryBudgetCeiling is the default --memory-limit (128 MiB) plus
	// the 32 MiB margin the benchmarks allow (scripts/bench
	// --rss-margin-mib; README, Memory).
	memoryBudgetCeiling = (128 + 32) << 20
	// memListObjects ConfigMaps of memValueBytes make a LIST of about
	// 4 MB, larger than the default LIST buffer.
	memListObjects = 2900
	memValueBytes  = 1200
	memListClients = 200
	// memBodyClients each send memBodyRequests bodies of memBodyBytes.
	memBodyClients  = 100
	memBodyRequests = 2
	memBodyBytes    = 2_900_000
)

// TestMemoryBudget_ConcurrentLists has memListClients clients list a
// 4 MB collection at once, each waiting a second before it reads the
// answer (a slow client holds its LIST's memory meanwhile). Every client
// must get the whole list, or kube-apiserver's 429 with Retry-After;
// the daemon's peak RSS must stay under memoryBudgetCeiling.
func TestMemoryBudget_ConcurrentLists(t *testing.T) {
	raiseFileLimit(t, 4*memListClients+1000)
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "mem")
	seedConfigMaps(t, d, "mem", memListObjects, memValueBytes)

	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range memListClients {
		wg.Go(func() {
			<-start
			code, err := slowList(client, d.URL+"/api/v1/namespaces/mem/configmaps")
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("answers: %v", codes)
	if codes[http.StatusOK] == 0 {
		t.Errorf("no client got its list: %v", codes)
	}
	checkPeakRSSUnder(t, d, memoryBudgetCeiling)
}

// slowList lists url, waits a second before reading the answer, and
// checks it: a 200 with every item, or a 429 with Retry-After.
func slowList(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, fmt.Errorf("list: %w", err)
	}
	defer resp.Body.Close()
	time.Sleep(time.Second)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("list: read %d answer: %w", resp.StatusCode, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil || len(list.Items) != memListObjects {
			return resp.StatusCode, fmt.Errorf("list: 200 with %d items (%v), want %d", len(list.Items), err, memListObjects)
		}
	case http.StatusTooManyRequests:
		if resp.Header.Get("Retry-After") == "" {
			return resp.StatusCode, fmt.Errorf("list: 429 without Retry-After: %s", body)
		}
	default:
		return resp.StatusCode, fmt.Errorf("list: %d %s", resp.StatusCode, trimBody(body))
	}
	return resp.StatusCode, nil
}

// TestMemoryBudget_LargeBodies has memBodyClients clients each send
// memBodyRequests ConfigMaps of memBodyBytes at once: half with one
// value that is too long for a ConfigMap (422 once decoded and
// validated), half with many small keys (created). Every request must get
// its 201 or 422, or a 429 with Retry-After; the daemon's peak RSS must
// stay under memoryBudgetCeiling; and every ConfigMap acknowledged must be
// there afterwards.
func TestMemoryBudget_LargeBodies(t *testing.T) {
	raiseFileLimit(t, 4*memBodyClients+1000)
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "mem")
	tooLong := []byte(`{"metadata":{"generateName":"long-"},"data":{"a":"` + strings.Repeat("x", memBodyBytes) + `"}}`)
	var b strings.Builder
	b.WriteString(`{"metadata":{"generateName":"keys-"},"data":{`)
	for i := 0; b.Len() < memBodyBytes; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	b.WriteString("}}")
	manyKeys := []byte(b.String())

	tr := &http.Transport{MaxIdleConnsPerHost: -1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	codes := map[int]int{}
	var created []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range memBodyClients {
		body := tooLong
		if i%2 == 1 {
			body = manyKeys
		}
		wg.Go(func() {
			<-start
			for range memBodyRequests {
				code, name, err := postBody(client, d.URL+"/api/v1/namespaces/mem/configmaps", body)
				mu.Lock()
				codes[code]++
				if name != "" {
					created = append(created, name)
				}
				if err != nil {
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("answers: %v", codes)
	if codes[http.StatusCreated] == 0 || codes[http.StatusUnprocessableEntity] == 0 {
		t.Errorf("answers %v; want some 201s and some 422s", codes)
	}
	checkPeakRSSUnder(t, d, memoryBudgetCeiling)
	for _, name := range created {
		if r := rawGet(t, d, "/api/v1/namespaces/mem/configmaps/"+name); r.Status != http.StatusOK {
			t.Errorf("GET acknowledged ConfigMap %s: %d %s", name, r.Status, trimBody(r.Body))
		}
	}
}

// postBody posts body to url and checks the answer: 201 (returning the
// name created), 422, or 429 with Retry-After.
func postBody(client *http.Client, url string, body []byte) (int, string, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", fmt.Errorf("post: read %d answer: %w", resp.StatusCode, err)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		var obj struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(out, &obj); err != nil || obj.Metadata.Name == "" {
			return resp.StatusCode, "", fmt.Errorf("post: 201 without a name (%v): %s", err, trimBody(out))
		}
		return resp.StatusCode, obj.Metadata.Name, nil
	case http.StatusUnprocessableEntity:
	case http.StatusTooManyRequests:
		if resp.Header.Get("Retry-After") == "" {
			return resp.StatusCode, "", fmt.Errorf("post: 429 without Retry-After: %s", trimBody(out))
		}
	default:
		return resp.StatusCode, "", fmt.Errorf("post: %d %s", resp.StatusCode, trimBody(out))
	}
	return resp.StatusCode, "", nil
}

// seedConfigMaps creates n ConfigMaps with a value of size bytes in ns,
// 16 at a time.
func seedConfigMaps(t *testing.T, d *Daemon, ns string, n, size int) {
	t.Helper()
	value := strings.Repeat("v", size)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				body := fmt.Sprintf(`{"metadata":{"name":"seed-%d"},"data":{"k":%q}}`, i, value)
				if r := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json", "", []byte(body)); r.Status != http.StatusCreated {
					t.Errorf("seed %d: %d %s", i, r.Status, trimBody(r.Body))
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// trimBody is the start of an answer's body, for messages.
func trimBody(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
