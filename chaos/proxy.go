package chaos

import (
	"bufio"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/fencegate/fencegate/testkit/zktest"
)

// proxyChunkBytesMax is the most a proxy pump reads before it forwards,
// 32 KiB: small enough that a black-holed pump holds little, large enough
// for etcd's snapshot stream.
const proxyChunkBytesMax = 32 << 10

// sniffTimeout bounds reading a peer connection's first request headers.
const sniffTimeout = 3 * time.Second

// LinkFault is what a proxy does to the traffic of one source. The zero
// value passes everything through.
type LinkFault struct {
	// Blackhole holds every byte (both directions) until the fault is
	// cleared, then delivers it late, as a partition TCP outlives would.
	// New connections are accepted and hang.
	Blackhole bool
	// Delay is added before every forwarded chunk.
	Delay time.Duration
	// DropP is the chance, per forwarded chunk, that the proxy resets the
	// connection instead (both sides closed).
	DropP float64
}

// Proxy is one TCP proxy on loopback standing for a network link: every
// connection a party makes to another goes through the proxy of that
// link, which can delay, reset or black-hole it. A proxy in front of an
// etcd member's peer port serves every other member; it tells them apart
// by the X-Server-From header of their first request (sniff), so one
// member can be cut from another.
type Proxy struct {
	name   string
	target string
	ln     net.Listener
	sniff  func(*bufio.Reader) string // source of a connection, "" for any

	mu      sync.Mutex
	faults  map[string]LinkFault // by source; "" applies to every source
	changed chan struct{}        // closed and replaced on every change
	closed  bool
	conns   map[net.Conn]struct{}
	rng     *rand.Rand
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(name, target string, seed uint64, sniff func(*bufio.Reader) string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{name: name, target: target, ln: ln, sniff: sniff, faults: map[string]LinkFault{},
		changed: make(chan struct{}), conns: map[net.Conn]struct{}{}, rng: rand.New(rand.NewPCG(seed, 0x9e3779b9))}
	go p.accept()
	return p, nil
}

// Name returns the link's name.
func (p *Proxy) Name() string { return p.name }

// Addr returns the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set puts fault f on the traffic of source src ("" for every source).
func (p *Proxy) Set(src string, f LinkFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f == (LinkFault{}) {
		delete(p.faults, src)
	} else {
		p.faults[src] = f
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// Heal clears every fault.
func (p *Proxy) Heal() {
	p.mu.Lock()
	srcs := make([]string, 0, len(p.faults))
	for s := range p.faults {
		srcs = append(srcs, s)
	}
	p.mu.Unlock()
	for _, s := range srcs {
		p.Set(s, LinkFault{})
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	close(p.changed)
	p.changed = make(chan struct{})
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// track registers c so Close can end it; false once the proxy is closed.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) serve(down net.Conn) {
	in := bufio.NewReaderSize(down, proxyChunkBytesMax)
	src := ""
	if p.sniff != nil {
		down.SetReadDeadline(time.Now().Add(sniffTimeout))
		src = p.sniff(in)
		down.SetReadDeadline(time.Time{})
	}
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		down.Close()
		return
	}
	if !p.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	defer p.untrack(down, up)
	done := make(chan struct{}, 2)
	go func() { p.pump(src, in, up); done <- struct{}{} }()
	go func() { p.pump(src, up, down); done <- struct{}{} }()
	<-done // one side ended: end both (late data already held is lost with the connection)
}

// pump forwards from r to w, applying the source's fault to every chunk.
func (p *Proxy) pump(src string, r io.Reader, w net.Conn) {
	buf := make([]byte, proxyChunkBytesMax)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if !p.pass(src) {
				return
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if cw, ok := w.(interface{ CloseWrite() error }); ok && errors.Is(err, io.EOF) {
				cw.CloseWrite()
			}
			return
		}
	}
}

// pass waits out a black hole and a delay; false means reset the
// connection (a drop, or the proxy closed).
func (p *Proxy) pass(src string) bool {
	for {
		p.mu.Lock()
		f, ok := p.faults[src]
		if !ok {
			f = p.faults[""]
		}
		closed, changed := p.closed, p.changed
		drop := f.DropP > 0 && p.rng.Float64() < f.DropP
		p.mu.Unlock()
		switch {
		case closed || drop:
			return false
		case f.Blackhole:
			<-changed
			continue
		case f.Delay > 0:
			time.Sleep(f.Delay)
		}
		return true
	}
}

// freePorts returns n distinct free loopback ports for the processes
// that listen on them, and listen again after a restart: outside the
// kernel's ephemeral range (zktest.RestartablePorts), so that no
// outgoing connection takes one while its process is down.
func freePorts(n int) ([]int, error) { return zktest.RestartablePorts(n) }
