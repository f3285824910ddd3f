package zktest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// Ports a restarted server binds again are taken from
// [restartablePortLo, the kernel's first ephemeral port): below the
// ephemeral range (net.ipv4.ip_local_port_range), so that no outgoing
// connection made by any process on the machine while the server is down
// can sit on its port and make the restart fail with "address already in
// use". Where the ephemeral range starts too low for that, ports come from
// the kernel as usual.
const (
	restartablePortLo     = 10000
	restartablePortsMin   = 1000 // the range must hold at least this many
	ephemeralRangeDefault = 32768
)

// RestartablePorts returns n distinct loopback ports free right now (each
// listened on, all at once, then released) outside the kernel's ephemeral
// range: for servers that are killed and started again on the same
// address (ZooKeeper members, the chaos suite's etcd members and serve
// replicas).
func RestartablePorts(n int) ([]int, error) {
	hi := ephemeralLo()
	if hi-restartablePortLo < restartablePortsMin {
		return kernelPorts(n)
	}
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	span := hi - restartablePortLo
	start := rand.IntN(span)
	var ports []int
	for i := 0; i < span && len(ports) < n; i++ {
		p := restartablePortLo + (start+i)%span
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		lns = append(lns, l)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("zktest: %d free ports in [%d, %d), want %d", len(ports), restartablePortLo, hi, n)
	}
	return ports, nil
}

// ephemeralLo is the first port of the kernel's ephemeral range.
func ephemeralLo() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralRangeDefault
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return ephemeralRangeDefault
	}
	return lo
}

// kernelPorts returns n distinct ports the kernel picks.
func kernelPorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
