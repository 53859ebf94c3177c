// Load client for the broadcast target of issue 50 (benches/scripts/broadcast.sh): holds N
// long-lived subscribers (server-sent events or WebSockets) against one
// server and measures whether every subscriber gets every broadcast, how
// late, and what the server costs meanwhile.
//
//	go run . -url http://127.0.0.1:8050 -mode ws -n 1000 -window 30s -pid 1234 -server axum
//
// Phases:
//
//  1. Ramp: N subscribers opened `-ramp` at a time; each must get its
//     answer (200 text/event-stream, or 101) within `-connect-timeout`.
//  2. Settle (`-settle`), then the measurement window (`-window`): every
//     broadcast whose timestamp falls in the window counts. A broadcast's
//     delivery latency is its arrival time minus the unix milliseconds it
//     carries (the server runs on this host, same clock; the stamp is whole
//     milliseconds, so latencies read up to 1 ms high). The window's
//     broadcasts are those any subscriber saw; each subscriber connected at
//     the window's start is expected to receive all of them.
//  3. Grace (`-grace`): broadcasts stamped in the window may still arrive.
//
// In ws mode each connection also sends a text message every `-echo-every`
// (first one at a random point of that interval) and times its echo; echoes
// sent in the window count. Throughout the window a separate keep-alive
// client asks `GET /` `-get-rate` times a second. With `-pid`, the server's
// Threads and VmRSS (from /proc/PID/status) are sampled through the run
// (peak) and at the end of the window, and its CPU time over the window is
// read from /proc/PID/stat. `-n 0` measures `GET /` alone (a baseline).
//
// Output: one line `key=value ...` (stdout, prefixed "result"), one human
// line, and connect errors by kind on stderr.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

type config struct {
	base           string
	mode           string
	n              int
	window         time.Duration
	settle         time.Duration
	grace          time.Duration
	ramp           int
	connectTimeout time.Duration
	echoEvery      time.Duration
	getRate        int
	pid            int
	server         string
}

func parseFlags() config {
	var c config
	flag.StringVar(&c.base, "url", "http://127.0.0.1:8050", "the server's base URL")
	flag.StringVar(&c.mode, "mode", "sse", "sse or ws")
	flag.IntVar(&c.n, "n", 1000, "subscribers (0: GET / alone)")
	flag.DurationVar(&c.window, "window", 30*time.Second, "measurement window")
	flag.DurationVar(&c.settle, "settle", 2*time.Second, "wait between the ramp's end and the window")
	flag.DurationVar(&c.grace, "grace", 3*time.Second, "wait after the window for its last broadcasts")
	flag.IntVar(&c.ramp, "ramp", 500, "subscribers opened at a time")
	flag.DurationVar(&c.connectTimeout, "connect-timeout", 10*time.Second, "time for one subscriber's answer")
	flag.DurationVar(&c.echoEvery, "echo-every", 10*time.Second, "ws: time between one connection's echo messages")
	flag.IntVar(&c.getRate, "get-rate", 4, "plain GET / requests per second")
	flag.IntVar(&c.pid, "pid", 0, "the server's process id, for threads, RSS and CPU")
	flag.StringVar(&c.server, "server", "", "a name for the server in the output")
	flag.Parse()
	c.base = strings.TrimRight(c.base, "/")
	if c.mode != "sse" && c.mode != "ws" {
		fmt.Fprintln(os.Stderr, "-mode must be sse or ws")
		os.Exit(2)
	}
	return c
}

// A received broadcast: its stamp and its delivery latency in ms.
type arrival struct {
	stamp   int64
	latency float64
}

// An echo sent: when, and its round trip (negative until it comes back).
type echo struct {
	sent time.Time
	rtt  float64
}

// One subscriber. The reader goroutine owns the connection; mu guards the
// records the main goroutine reads at the end.
type subscriber struct {
	mu       sync.Mutex
	arrivals []arrival
	echoes   []echo
	closed   time.Time // zero while open
	closeErr string
}

func (s *subscriber) received(stamp int64, at time.Time) {
	lat := float64(at.UnixMicro())/1000 - float64(stamp)
	s.mu.Lock()
	s.arrivals = append(s.arrivals, arrival{stamp, lat})
	s.mu.Unlock()
}

func (s *subscriber) ended(err error) {
	s.mu.Lock()
	s.closed = time.Now()
	if err != nil {
		s.closeErr = err.Error()
	}
	s.mu.Unlock()
}

// isStamp reports whether a message is a broadcast: all decimal digits.
func isStamp(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func newTransport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
	}
}

// openSSE connects one event-stream subscriber; the returned function reads
// it until it ends.
func openSSE(ctx context.Context, c *config, client *http.Client, s *subscriber) (func(), error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("answer %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return func() { s.ended(readEvents(resp.Body, s)) }, nil
}

// readEvents parses an event stream: `data:` lines gathered until a blank
// line; comments and other fields ignored.
func readEvents(body io.ReadCloser, s *subscriber) error {
	defer body.Close()
	r := bufio.NewReaderSize(body, 1024)
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = trimEOL(line)
		switch {
		case len(line) == 0:
			if isStamp(data) {
				stamp, _ := strconv.ParseInt(string(data), 10, 64)
				s.received(stamp, time.Now())
			}
			data = data[:0]
		case line[0] == ':':
		case strings.HasPrefix(string(line), "data:"):
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// openWS connects one WebSocket subscriber; the returned function reads it
// until it ends, and meanwhile sends its echo messages.
func openWS(ctx context.Context, run context.Context, c *config, client *http.Client, s *subscriber, id int) (func(), error) {
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/ws"
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 16)
	return func() {
		go sendEchoes(run, c, conn, s, id)
		s.ended(readWS(run, conn, s))
		conn.CloseNow()
	}, nil
}

func readWS(run context.Context, conn *websocket.Conn, s *subscriber) error {
	for {
		typ, msg, err := conn.Read(run)
		if err != nil {
			return err
		}
		now := time.Now()
		if typ != websocket.MessageText {
			continue
		}
		if isStamp(msg) {
			stamp, _ := strconv.ParseInt(string(msg), 10, 64)
			s.received(stamp, now)
			continue
		}
		// "echo <id> <seq>": the seq-th echo of this connection.
		f := strings.Fields(string(msg))
		if len(f) != 3 || f[0] != "echo" {
			continue
		}
		seq, err := strconv.Atoi(f[2])
		s.mu.Lock()
		if err == nil && seq < len(s.echoes) && s.echoes[seq].rtt < 0 {
			s.echoes[seq].rtt = float64(now.Sub(s.echoes[seq].sent).Microseconds()) / 1000
		}
		s.mu.Unlock()
	}
}

func sendEchoes(run context.Context, c *config, conn *websocket.Conn, s *subscriber, id int) {
	wait := time.Duration(rand.Int64N(int64(c.echoEvery)))
	for seq := 0; ; seq++ {
		select {
		case <-run.Done():
			return
		case <-time.After(wait):
		}
		wait = c.echoEvery
		s.mu.Lock()
		s.echoes = append(s.echoes, echo{time.Now(), -1})
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(run, c.echoEvery)
		err := conn.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf("echo %d %d", id, seq)))
		cancel()
		if err != nil {
			return
		}
	}
}

// ramp opens the subscribers, c.ramp at a time, and returns those that
// connected (nil entries failed) with the failures counted by kind.
func ramp(run context.Context, c *config) ([]*subscriber, map[string]int) {
	client := &http.Client{Transport: newTransport(c.connectTimeout)}
	subs := make([]*subscriber, c.n)
	errs := map[string]int{}
	var mu sync.Mutex
	for start := 0; start < c.n; start += c.ramp {
		end := min(start+c.ramp, c.n)
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Add(1)
			go func() {
				s := &subscriber{}
				ctx, cancel := context.WithTimeout(run, c.connectTimeout)
				var read func()
				var err error
				if c.mode == "sse" {
					// The request's context is the stream's: it lives for the run.
					read, err = openSSE(run, c, client, s)
				} else {
					read, err = openWS(ctx, run, c, client, s, i)
				}
				cancel()
				if err != nil {
					mu.Lock()
					errs[errorKind(err)]++
					mu.Unlock()
					wg.Done()
					return
				}
				subs[i] = s
				wg.Done()
				read()
			}()
		}
		wg.Wait()
	}
	return subs, errs
}

// errorKind shortens an error to its kind, for counting.
func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, syscall.EMFILE):
		return "emfile"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no-local-port"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	msg := err.Error()
	if strings.Contains(msg, "timeout") {
		return "timeout"
	}
	if len(msg) > 60 {
		msg = msg[len(msg)-60:]
	}
	return strings.ReplaceAll(msg, " ", "_")
}

// The server's process, read from /proc.
type procSample struct{ threads, rssKiB int }

func readStatus(pid int) (procSample, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, false
	}
	var p procSample
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Threads:":
			p.threads, _ = strconv.Atoi(f[1])
		case "VmRSS:":
			p.rssKiB, _ = strconv.Atoi(f[1])
		}
	}
	return p, true
}

// cpuTicks is the process's user plus system time in clock ticks (1/100 s).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the whole line.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

// peaks samples the server until stop is closed.
type peaks struct {
	mu   sync.Mutex
	peak procSample
	gone bool
}

func (p *peaks) watch(pid int, stop <-chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		s, ok := readStatus(pid)
		p.mu.Lock()
		if !ok {
			p.gone = true
		}
		p.peak.threads = max(p.peak.threads, s.threads)
		p.peak.rssKiB = max(p.peak.rssKiB, s.rssKiB)
		p.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// plainGets asks GET / at c.getRate a second until stop, each on its own
// goroutine so a slow answer does not lower the rate; it returns the
// latencies of good answers (ms) and the number asked.
func plainGets(c *config, stop <-chan struct{}) ([]float64, int) {
	client := &http.Client{Transport: newTransport(5 * time.Second), Timeout: 5 * time.Second}
	var mu sync.Mutex
	var lats []float64
	var wg sync.WaitGroup
	asked := 0
	t := time.NewTicker(time.Second / time.Duration(c.getRate))
	defer t.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return lats, asked
		case <-t.C:
		}
		asked++
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Get(c.base + "/")
			if err != nil {
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(body) != "ok" {
				return
			}
			ms := float64(time.Since(start).Microseconds()) / 1000
			mu.Lock()
			lats = append(lats, ms)
			mu.Unlock()
		}()
	}
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// result gathers the output's fields in order.
type result struct {
	keys []string
	vals map[string]string
}

func (r *result) set(k string, v any) {
	if r.vals == nil {
		r.vals = map[string]string{}
	}
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	switch v := v.(type) {
	case float64:
		r.vals[k] = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		r.vals[k] = fmt.Sprint(v)
	}
}

func (r *result) line() string {
	var b strings.Builder
	b.WriteString("result")
	for _, k := range r.keys {
		fmt.Fprintf(&b, " %s=%s", k, r.vals[k])
	}
	return b.String()
}

func nofile(need int) uint64 {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	// Go raises the soft limit to the hard one at start (since 1.19); this
	// only checks, and tries once more if it is still short.
	if lim.Cur < uint64(need) && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// selfCPU is this process's user plus system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	c := parseFlags()
	var r result
	r.set("server", c.server)
	r.set("mode", c.mode)
	r.set("n", c.n)
	lim := nofile(c.n + 256)
	if lim < uint64(c.n+256) {
		fmt.Fprintf(os.Stderr, "warning: RLIMIT_NOFILE %d is short of %d\n", lim, c.n+256)
	}
	run, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	stopWatch := make(chan struct{})
	var pk peaks
	if c.pid > 0 {
		go pk.watch(c.pid, stopWatch)
	}

	rampStart := time.Now()
	subs, errs := ramp(run, &c)
	rampTime := time.Since(rampStart)
	time.Sleep(c.settle)

	// The window: subscribers open at its start are the ones measured.
	t0 := time.Now()
	open := make([]*subscriber, 0, len(subs))
	connected := 0
	for _, s := range subs {
		if s == nil {
			continue
		}
		connected++
		s.mu.Lock()
		if s.closed.IsZero() {
			open = append(open, s)
		}
		s.mu.Unlock()
	}
	cpu0 := cpuTicks(c.pid)
	self0 := selfCPU()
	stopGets := make(chan struct{})
	type gets struct {
		lats  []float64
		asked int
	}
	getsDone := make(chan gets)
	go func() {
		lats, asked := plainGets(&c, stopGets)
		getsDone <- gets{lats, asked}
	}()
	time.Sleep(c.window)
	t1 := time.Now()
	close(stopGets)
	var end procSample
	if c.pid > 0 {
		end, _ = readStatus(c.pid)
	}
	cpu1 := cpuTicks(c.pid)
	self1 := selfCPU()
	time.Sleep(c.grace)
	stopAll()
	close(stopWatch)
	g := <-getsDone

	// Every broadcast stamped in the window that anyone saw is expected by
	// every subscriber open at the window's start.
	lo, hi := t0.UnixMilli(), t1.UnixMilli()
	ticks := map[int64]bool{}
	var lats, rtts []float64
	perSub := make([]int, len(open))
	dropped := 0
	var echoSent int
	closeErrs := map[string]int{}
	for i, s := range open {
		s.mu.Lock()
		seen := map[int64]bool{}
		for _, a := range s.arrivals {
			if a.stamp >= lo && a.stamp < hi && !seen[a.stamp] {
				seen[a.stamp] = true
				ticks[a.stamp] = true
				lats = append(lats, a.latency)
			}
		}
		perSub[i] = len(seen)
		for _, e := range s.echoes {
			if e.sent.After(t0) && e.sent.Before(t1) {
				echoSent++
				if e.rtt >= 0 {
					rtts = append(rtts, e.rtt)
				}
			}
		}
		// Ended before the grace ran out (not by the run's own stop).
		if !s.closed.IsZero() && s.closed.Before(t1.Add(c.grace)) {
			dropped++
			closeErrs[errorKind(errors.New(s.closeErr))]++
		}
		s.mu.Unlock()
	}
	missedSubs, missed := 0, 0
	for _, got := range perSub {
		if got < len(ticks) {
			missedSubs++
			missed += len(ticks) - got
		}
	}
	sort.Float64s(lats)
	sort.Float64s(rtts)
	sort.Float64s(g.lats)

	r.set("connected", connected)
	r.set("failed", c.n-connected)
	r.set("open_at_window", len(open))
	r.set("dropped", dropped)
	r.set("ramp_s", rampTime.Seconds())
	r.set("window_s", t1.Sub(t0).Seconds())
	r.set("ticks", len(ticks))
	r.set("expected", len(ticks)*len(open))
	r.set("received", len(lats))
	r.set("missed", missed)
	r.set("missed_subs", missedSubs)
	r.set("deliv_p50_ms", percentile(lats, 0.50))
	r.set("deliv_p99_ms", percentile(lats, 0.99))
	r.set("deliv_max_ms", percentile(lats, 1))
	if c.mode == "ws" {
		r.set("echo_sent", echoSent)
		r.set("echo_ok", len(rtts))
		r.set("echo_p50_ms", percentile(rtts, 0.50))
		r.set("echo_p99_ms", percentile(rtts, 0.99))
	}
	r.set("get_ok", len(g.lats))
	r.set("get_asked", g.asked)
	r.set("get_p50_ms", percentile(g.lats, 0.50))
	r.set("get_p99_ms", percentile(g.lats, 0.99))
	if c.pid > 0 {
		pk.mu.Lock()
		r.set("threads", end.threads)
		r.set("threads_peak", pk.peak.threads)
		r.set("rss_kib", end.rssKiB)
		r.set("rss_peak_kib", pk.peak.rssKiB)
		r.set("server_exited", pk.gone)
		pk.mu.Unlock()
		// Clock ticks are 1/100 s on Linux.
		r.set("server_cpu_pct", float64(cpu1-cpu0)/t1.Sub(t0).Seconds())
	}
	// The client shares the machine: its own CPU over the window.
	r.set("client_cpu_pct", 100*(self1-self0).Seconds()/t1.Sub(t0).Seconds())
	r.set("nofile", lim)
	fmt.Println(r.line())
	fmt.Printf("%s %s n=%d: %d/%d connected (%d dropped), %d/%d broadcasts (%d subscribers missed some), "+
		"delivery p50 %s p99 %s ms; GET / %d/%d p99 %s ms; %s threads, %s KiB\n",
		c.server, c.mode, c.n, connected, c.n, dropped, len(lats), len(ticks)*len(open), missedSubs,
		r.vals["deliv_p50_ms"], r.vals["deliv_p99_ms"], len(g.lats), g.asked, r.vals["get_p99_ms"],
		r.vals["threads"], r.vals["rss_kib"])
	for kind, n := range errs {
		fmt.Fprintf(os.Stderr, "connect failed: %d × %s\n", n, kind)
	}
	for kind, n := range closeErrs {
		fmt.Fprintf(os.Stderr, "ended early: %d × %s\n", n, kind)
	}
}
