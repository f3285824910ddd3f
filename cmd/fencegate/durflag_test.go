// Proves that a duration flag refuses, as a usage error (exit 2) and
// before any network call, every value its command could only fail on
// later (negative, zero without a stated meaning, fractions of the wire's
// millisecond), and accepts every other value over the whole range.
package main

import (
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDurationFlagsRefusedBeforeAnyCall runs lock and elect with each bad
// duration against a listener that counts connections: exit 2, the flag
// named, and no connection.
func TestDurationFlagsRefusedBeforeAnyCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	reg := "http://" + ln.Addr().String()
	for _, c := range []struct{ flag, value, want string }{
		{"--ttl", "-5s", "negative"},
		{"--ttl", "0", "0 is not accepted"},
		{"--ttl", "2000500us", "whole number of milliseconds"},
		{"--ttl", "1s", "below 2s"},
		{"--ttl", "1000000d", "want a duration"},
		{"--ttl", "876001h", "above"},
		{"--grace", "-1s", "negative"},
		{"--grace", "0s", "0 is not accepted"},
		{"--wait", "-1s", "negative"},
	} {
		for _, verb := range []string{"lock", "elect"} {
			if verb == "elect" && c.flag == "--wait" {
				continue
			}
			_, errOut, code := runCLI(verb, "jobs/d", "--registry", reg, "--token", lockToken, c.flag, c.value, "--", "true")
			if code != 2 || !strings.Contains(errOut, c.flag) || !strings.Contains(errOut, c.want) {
				t.Errorf("%s %s %s: exit %d, want 2 naming %s and %q:\n%s", verb, c.flag, c.value, code, c.flag, c.want, errOut)
			}
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d connection(s) to the registry before the flags were refused", n)
	}
	// The negative control: a good value does reach the registry.
	if _, errOut, _ := runCLI("lock", "jobs/d", "--registry", reg, "--token", lockToken, "--ttl", "2s", "--", "true"); conns.Load() == 0 {
		t.Fatalf("a good --ttl made no call; the count above proves nothing:\n%s", errOut)
	}
}

// TestDurationRangeOverItsWholeDomain draws durations over the whole
// int64 range (log-uniform magnitudes, both signs, the edges often): the
// flag accepts exactly the values in its range, and keeps what it accepts.
func TestDurationRangeOverItsWholeDomain(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	edges := []time.Duration{0, 1, -1, time.Microsecond, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1,
		ttlRange.min - time.Millisecond, ttlRange.min, ttlRange.min + time.Microsecond,
		ttlRange.max, ttlRange.max + time.Millisecond, ttlRange.max - time.Millisecond, 1<<63 - 1, -1 << 63}
	for i := 0; i < 20000; i++ {
		var v time.Duration
		if i < len(edges) {
			v = edges[i]
		} else {
			v = time.Duration(rng.Int64N(1 << rng.IntN(63)))
			if rng.IntN(4) == 0 {
				v = v / time.Millisecond * time.Millisecond // whole ms, often
			}
			if rng.IntN(3) == 0 {
				v = -v
			}
		}
		for _, r := range []durationRange{ttlRange, graceRange, {zero: "as long as it takes"}} {
			var got time.Duration
			d := &durationValue{p: &got, r: r}
			if r.min == 0 {
				d.r.min = time.Millisecond
			}
			err := d.Set(v.String())
			in := v > 0 && v >= d.r.min && (d.r.max == 0 || v <= d.r.max) && (!d.r.wholeMs || v%time.Millisecond == 0) || v == 0 && r.zero != ""
			if in != (err == nil) {
				t.Fatalf("range %+v, %v: accepted=%v, want %v (%v)", r, v, err == nil, in, err)
			}
			if err == nil && got != v {
				t.Fatalf("range %+v: set %v, kept %v", r, v, got)
			}
		}
	}
}
