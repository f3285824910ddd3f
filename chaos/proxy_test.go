// Proves the link proxy does what a fault says: passes bytes through,
// holds them in a black hole and delivers them late on heal, delays them,
// and resets connections when dropping.
package chaos

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string, wait time.Duration) (string, error) {
	t.Helper()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestProxyFaults(t *testing.T) {
	p, err := NewProxy("test", echoServer(t), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(t, c, r, "pass", time.Second); err != nil || got != "pass" {
		t.Fatalf("pass: %q, %v", got, err)
	}

	p.Set("", LinkFault{Blackhole: true})
	if got, err := roundTrip(t, c, r, "held", 200*time.Millisecond); err == nil {
		t.Fatalf("black hole delivered %q", got)
	}
	p.Set("", LinkFault{})
	c.SetDeadline(time.Now().Add(time.Second))
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("after heal: %q, %v; want the held bytes delivered late", line, err)
	}

	p.Set("", LinkFault{Delay: 150 * time.Millisecond})
	start := time.Now()
	if got, err := roundTrip(t, c, r, "slow", 2*time.Second); err != nil || got != "slow" {
		t.Fatalf("delay: %q, %v", got, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond { // both directions delayed
		t.Errorf("delay: round trip took %s, want >= 300ms", d)
	}

	p.Set("", LinkFault{DropP: 1})
	if _, err := roundTrip(t, c, r, "dropped", time.Second); err == nil {
		t.Fatal("drop: the connection survived")
	}
}

// TestProxySources: on a sniffing proxy a fault on one source leaves the
// others alone.
func TestProxySources(t *testing.T) {
	sniff := func(r *bufio.Reader) string {
		b, _ := r.Peek(2)
		return string(b)
	}
	p, err := NewProxy("test", echoServer(t), 1, sniff)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Set("aa", LinkFault{Blackhole: true})
	for _, c := range []struct {
		msg  string
		pass bool
	}{{"aa-cut", false}, {"bb-free", true}} {
		conn, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := roundTrip(t, conn, bufio.NewReader(conn), c.msg, 300*time.Millisecond)
		conn.Close()
		if (err == nil && got == c.msg) != c.pass {
			t.Errorf("source %q: got %q, %v; want passing=%t", c.msg[:2], got, err, c.pass)
		}
	}
}
