package indexercmd_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// The slow-body attack of issue 27: 1,500 connections from 100 source
// addresses (15 each, under the per-source cap of 64) each send the header
// of PUT /announce with Content-Length: 200, then one byte a second, and
// come back a second after each connection is closed. Before, they held
// the ingest listener's 1,024 connections for the server's 30 s
// ReadTimeout while everything else waited in the kernel's backlog, and
// /health timed out. Now announce bodies have AnnounceBodyTimeout, and at
// the cap a new connection evicts the oldest exchange: /health, asked
// every 200 ms from another address over a new connection, answers within
// 1 s every time for 10 s.
//
// Under -short (the unit lane), and under the race detector, which makes
// every connection several times dearer, the attack runs at a quarter of
// the scale in the same proportions (375 connections from 25 sources
// against a cap of 256): on a loaded 2-core machine the full attack then
// needs more CPU than the process gets, and /health waits for the
// scheduler, not the listener.
func TestIngestSlowBodies(t *testing.T) {
	attackers, sources, maxConns := 1500, 100, cli.DefaultMaxConns
	if !lane.Full(t, "1,500 slow bodies from 100 sources, a quarter under -short") || raceEnabled {
		attackers, sources, maxConns = attackers/4, sources/4, maxConns/4
	}
	// Each attacker costs a descriptor here and one in the node; keep room
	// for the rest of the process.
	if limit := fdLimit(t, 2*attackers+512); limit < uint64(2*attackers+512) {
		// Scaled down, in the same proportions: half again as many slow
		// connections as the cap, 15 from each source.
		attackers = (int(limit) - 512) / 2
		maxConns, sources = attackers*2/3, max(1, attackers/15)
		if maxConns < 64 {
			t.Skipf("open-file limit %d leaves no room for the attack", limit)
		}
		t.Logf("open-file limit %d: %d attackers against a cap of %d connections", limit, attackers, maxConns)
	}
	r := runIndexer(t, "-max-conns", strconv.Itoa(maxConns))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	addr, err := r.tap.Addr(ctx, "ingest")
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var headers atomic.Int64 // headers sent, over all connections
	header := []byte("PUT /announce HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/octet-stream\r\nContent-Length: 200\r\n\r\n")
	for i := range attackers {
		from := net.IPv4(127, 0, 1, byte(1+i%sources))
		wg.Go(func() { slowBody(stop, from, addr, header, &headers) })
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// The attack is on once every attacker has sent its header (the
	// kernel takes connections beyond the cap into its backlog).
	for headers.Load() < int64(attackers) {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d attackers connected", headers.Load(), attackers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the listener full, the backlog holding the rest

	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   3 * time.Second, // a bound for the code before: a late answer is a failure too
	}
	var lat []time.Duration
	var failed []string
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); <-tick.C {
		start := time.Now()
		resp, err := client.Get("http://" + addr + "/health")
		d := time.Since(start)
		lat = append(lat, d)
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("after %v: %v", d.Round(time.Millisecond), err))
		case resp.StatusCode != http.StatusOK:
			failed = append(failed, fmt.Sprintf("after %v: %s", d.Round(time.Millisecond), resp.Status))
		case d > time.Second:
			failed = append(failed, fmt.Sprintf("answered after %v", d.Round(time.Millisecond)))
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	slices.Sort(lat)
	t.Logf("/health under %d slow bodies from %d sources (cap %d): %d probes, max %v, p99 %v, median %v; %d headers sent",
		attackers, sources, maxConns, len(lat), lat[len(lat)-1].Round(time.Microsecond),
		lat[(len(lat)*99+99)/100-1].Round(time.Microsecond), lat[len(lat)/2].Round(time.Microsecond), headers.Load())
	for i, f := range failed {
		if i == 5 {
			t.Errorf("... %d more", len(failed)-5)
			break
		}
		t.Errorf("/health %s, want 200 within 1 s", f)
	}
}

// slowBody is one attacker: from the address from, it sends header to
// addr, then a byte of the body a second, until the node closes the
// connection; a second later it does it again, until stop is closed.
func slowBody(stop <-chan struct{}, from net.IP, addr string, header []byte, headers *atomic.Int64) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 2 * time.Second}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if c, err := d.Dial("tcp", addr); err == nil {
			c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write(header); err == nil {
				headers.Add(1)
				trickle(stop, c, tick.C)
			}
			c.Close()
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// trickle writes a byte to c at each tick until a write fails or stop is
// closed. A write to a connection the node closed fails at the latest at
// the second one (the first draws a reset).
func trickle(stop <-chan struct{}, c net.Conn, tick <-chan time.Time) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return
		}
	}
}

// fdLimit raises the process's soft limit of open files to want if it is
// lower and the hard limit allows, and returns the limit in force.
func fdLimit(t *testing.T, want int) uint64 {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < uint64(want) && rl.Max > rl.Cur {
		old := rl
		rl.Cur = min(rl.Max, uint64(want))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Logf("raising the open-file limit from %d: %v", old.Cur, err)
			return old.Cur
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	return rl.Cur
}
