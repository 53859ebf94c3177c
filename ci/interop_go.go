// Go net/http against examples/echo and examples/testolope (called by
// ci/interop.sh).
//
//	go run ci/interop_go.go ECHO_PORT TESTOLOPE_PORT
//
// Standard library only: runs offline with no go.mod. Prints an `ok - ...`
// line per check that passes and a `NOT OK - ...` line per check that fails
// (on stderr), runs every check, and exits 1 if any failed.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Every request is bounded; the slowest check (keep-alive across the idle
// timeout) sleeps 6 s between two requests, outside any one request.
const timeout = 30 * time.Second

var failed bool

func ok(format string, args ...any) {
	fmt.Printf("ok - go net/http: "+format+"\n", args...)
}

func notOK(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "NOT OK - go net/http: "+format+"\n", args...)
	failed = true
}

// connTrace records what the transport did for the requests it traces: new
// connections dialled, reused ones, a `100 Continue` received, and the
// framing header it wrote for the request body.
type connTrace struct {
	newConns, reused atomic.Int64
	got100           atomic.Bool
	transferEncoding atomic.Value // string
}

func (t *connTrace) context() context.Context {
	return httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				t.reused.Add(1)
			} else {
				t.newConns.Add(1)
			}
		},
		Got100Continue: func() { t.got100.Store(true) },
		WroteHeaderField: func(key string, value []string) {
			if strings.EqualFold(key, "Transfer-Encoding") {
				t.transferEncoding.Store(strings.Join(value, ","))
			}
		},
	})
}

func newClient() (*http.Client, *http.Transport) {
	tr := &http.Transport{
		MaxIdleConnsPerHost:   32,
		ExpectContinueTimeout: 5 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout}, tr
}

// do sends one request and reads the whole answer.
func do(c *http.Client, ctx context.Context, method, url string, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, got, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// Keep-alive: a client's sequential requests share one connection.
func sequentialGets(base string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	var t connTrace
	for i := 0; i < 50; i++ {
		resp, _, err := do(c, t.context(), "GET", fmt.Sprintf("%s/get/%d", base, i), nil)
		if err != nil || resp.StatusCode != 200 {
			notOK("50 sequential GETs: request %d: %v %v", i, status(resp), err)
			return
		}
	}
	if n := t.newConns.Load(); n != 1 {
		notOK("50 sequential GETs: %d new connections, want 1 (%d reused)", n, t.reused.Load())
		return
	}
	ok("50 sequential GETs on one Client: 1 connection, 49 reuses (httptrace GotConn)")
}

// A body of unknown length goes out chunked (RFC 9112 §7.1) and the server
// decodes it: the echo is exact.
func chunkedPost(base string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	want := randomBytes(200_000)
	pr, pw := io.Pipe()
	go func() {
		// Uneven pieces, so chunk boundaries fall anywhere.
		for rest := want; len(rest) > 0; {
			n := 7919
			if len(rest) < n {
				n = len(rest)
			}
			if _, err := pw.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		pw.Close()
	}()
	var t connTrace
	req, _ := http.NewRequestWithContext(t.context(), "POST", base+"/chunked", pr)
	req.ContentLength = -1 // unknown: the transport must send it chunked
	resp, err := c.Do(req)
	if err != nil {
		notOK("chunked POST: %v", err)
		return
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	te, _ := t.transferEncoding.Load().(string)
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, want) || te != "chunked" {
		notOK("chunked POST: %s, Transfer-Encoding sent %q, echoed %d bytes of %d, equal %v, read error %v",
			resp.Status, te, len(got), len(want), bytes.Equal(got, want), err)
		return
	}
	ok("chunked POST (io.Pipe, Transfer-Encoding: chunked, 200 KB) echoed exactly")
}

// Expect: 100-continue (RFC 9110 §10.1.1): the server sends `100 Continue`
// before reading the body, so the client does not wait out its 5 s
// ExpectContinueTimeout, and the body still arrives whole.
func expectContinue(base string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	want := randomBytes(64 * 1024)
	var t connTrace
	req, _ := http.NewRequestWithContext(t.context(), "POST", base+"/expect", bytes.NewReader(want))
	req.Header.Set("Expect", "100-continue")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		notOK("Expect: 100-continue: %v", err)
		return
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, want) || !t.got100.Load() {
		notOK("Expect: 100-continue: %s, 100 received %v, echo equal %v (%d bytes), took %v, read error %v",
			resp.Status, t.got100.Load(), bytes.Equal(got, want), len(got), took.Round(time.Millisecond), err)
		return
	}
	ok("Expect: 100-continue (64 KB, ExpectContinueTimeout 5 s): 100 received (Got100Continue), echo exact, in %v",
		took.Round(10*time.Microsecond))
}

// HEAD (RFC 9110 §9.3.2) answers the GET's header fields, Content-Length
// included, with no content. A GET on the same connection right after it
// proves no body bytes followed the HEAD's header: they would be read as the
// start of the next response.
func head(base, what string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	var t connTrace
	getResp, getBody, err := do(c, t.context(), "GET", base, nil)
	if err != nil || getResp.StatusCode != 200 {
		notOK("HEAD %s: the GET first: %v %v", what, status(getResp), err)
		return
	}
	headResp, headBody, err := do(c, t.context(), "HEAD", base, nil)
	if err != nil || headResp.StatusCode != 200 {
		notOK("HEAD %s: %v %v", what, status(headResp), err)
		return
	}
	againResp, againBody, err := do(c, t.context(), "GET", base, nil)
	if err != nil || againResp.StatusCode != 200 || !bytes.Equal(againBody, getBody) {
		notOK("HEAD %s: the GET after it on the same connection: %v %q %v", what, status(againResp), againBody, err)
		return
	}
	getLen, headLen := getResp.Header.Get("Content-Length"), headResp.Header.Get("Content-Length")
	if getLen == "" || headLen != getLen || len(headBody) != 0 || t.newConns.Load() != 1 {
		notOK("HEAD %s: Content-Length %q, GET's %q; %d body bytes; %d connections for GET, HEAD, GET",
			what, headLen, getLen, len(headBody), t.newConns.Load())
		return
	}
	ok("HEAD %s: Content-Length %s as the GET's, no body; the next GET on the same connection is intact", what, headLen)
}

// Concurrency: 32 goroutines × 20 requests on one Transport, each body
// distinct so a mixed-up answer shows.
func concurrent(base string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	const goroutines, each = 32, 20
	var t connTrace
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) { // g passed in: before Go 1.22 the loop shares one g
			defer wg.Done()
			for i := 0; i < each; i++ {
				want := fmt.Sprintf("goroutine %d request %d %s", g, i, strings.Repeat("x", g*i))
				resp, got, err := do(c, t.context(), "POST", base+"/concurrent", strings.NewReader(want))
				if err != nil || resp.StatusCode != 200 || string(got) != want {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("g%d/%d: %v %v echo equal %v", g, i, status(resp), err, string(got) == want))
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	if len(errs) > 0 {
		notOK("32 goroutines × 20 requests: %d failed, first: %s", len(errs), errs[0])
		return
	}
	ok("32 goroutines × 20 POSTs (MaxIdleConnsPerHost 32): 640 × 200, bodies echoed, %d connections, %d reuses",
		t.newConns.Load(), t.reused.Load())
}

// Keep-alive past the server's idle timeout (5 s by default): the server
// closes the idle connection, and the client's next request must still
// succeed, on a new connection or by a retry.
func afterIdleTimeout(base string) {
	c, tr := newClient()
	defer tr.CloseIdleConnections()
	var t connTrace
	if resp, _, err := do(c, t.context(), "GET", base+"/before-idle", nil); err != nil || resp.StatusCode != 200 {
		notOK("request after the idle timeout: the first request: %v %v", status(resp), err)
		return
	}
	time.Sleep(6 * time.Second) // the client's pace: longer than the server's idle timeout
	var after connTrace
	resp, _, err := do(c, after.context(), "GET", base+"/after-idle", nil)
	if err != nil || resp.StatusCode != 200 {
		notOK("request 6 s after the first (server idle timeout 5 s): %v %v", status(resp), err)
		return
	}
	// GotConn runs once per attempt: a reuse then a new connection is a
	// retry after the reused connection failed.
	var conn string
	switch reused, dialled := after.reused.Load(), after.newConns.Load(); {
	case reused > 0 && dialled > 0:
		conn = "a new connection, retried after the idle one failed"
	case dialled > 0:
		conn = "a new connection (the idle one, closed by the server, was dropped)"
	default:
		conn = "the idle connection reused"
	}
	ok("a request 6 s after the first (idle timeout 5 s) succeeds, on %s", conn)
}

func status(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ci/interop_go.go ECHO_PORT TESTOLOPE_PORT")
		os.Exit(2)
	}
	echo := "http://127.0.0.1:" + os.Args[1]
	testolope := "http://127.0.0.1:" + os.Args[2]
	sequentialGets(echo)
	chunkedPost(echo)
	expectContinue(echo)
	head(echo+"/head", "on echo")
	head(testolope+"/testolope", "/testolope on testolope")
	concurrent(echo)
	afterIdleTimeout(echo)
	if failed {
		os.Exit(1)
	}
}
