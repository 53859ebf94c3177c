// Closed-loop keep-alive load, N connections for D seconds, recording each
// connection's request count and every request's latency: how fairly a
// server at saturation shares its time among connections (BENCHMARKS.md,
// "SCHED_BATCH and the tail at saturation").
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "")
	conns := flag.Int("c", 32, "")
	dur := flag.Duration("d", 5*time.Second, "")
	flag.Parse()
	req := []byte("GET /testolope HTTP/1.1\r\nHost: bench\r\n\r\n")
	counts := make([]int, *conns)
	lat := make([][]time.Duration, *conns)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(*dur)
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", *addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return
			}
			defer c.Close()
			r := bufio.NewReaderSize(c, 4096)
			for time.Now().Before(end) {
				t0 := time.Now()
				if _, err := c.Write(req); err != nil {
					return
				}
				n := -1
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
					if strings.HasPrefix(strings.ToLower(line), "content-length:") {
						n, _ = strconv.Atoi(strings.TrimSpace(line[15:]))
					}
				}
				if n > 0 {
					buf := make([]byte, n)
					if _, err := readFull(r, buf); err != nil {
						return
					}
				}
				lat[i] = append(lat[i], time.Since(t0))
				counts[i]++
			}
		}(i)
	}
	wg.Wait()
	var all []time.Duration
	var perConnP99 []time.Duration
	for i := range lat {
		all = append(all, lat[i]...)
		l := append([]time.Duration(nil), lat[i]...)
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		if len(l) > 0 {
			perConnP99 = append(perConnP99, l[len(l)*99/100])
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	sort.Ints(counts)
	sort.Slice(perConnP99, func(a, b int) bool { return perConnP99[a] < perConnP99[b] })
	q := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
	total := 0
	for _, c := range counts {
		total += c
	}
	fmt.Printf("req/s %.0f  p50 %.2fms p90 %.2fms p99 %.2fms p99.9 %.2fms max %.2fms\n",
		float64(total)/dur.Seconds(), ms(q(0.5)), ms(q(0.9)), ms(q(0.99)), ms(q(0.999)), ms(all[len(all)-1]))
	fmt.Printf("requests per connection: min %d  p10 %d  median %d  p90 %d  max %d  (max/min %.2f)\n",
		counts[0], counts[len(counts)/10], counts[len(counts)/2], counts[len(counts)*9/10], counts[len(counts)-1],
		float64(counts[len(counts)-1])/float64(max(counts[0], 1)))
	fmt.Printf("per-connection p99: min %.2fms median %.2fms max %.2fms\n",
		ms(perConnP99[0]), ms(perConnP99[len(perConnP99)/2]), ms(perConnP99[len(perConnP99)-1]))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
