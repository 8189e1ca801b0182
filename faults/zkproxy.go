package faults

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
)

// ZooKeeper has no fault hook in its peer transport, so a ZooKeeper
// ensemble is partitioned by proxies: node i reaches node j's quorum and
// election ports through a proxy of its own (i→j), named in node i's
// zoo.cfg instead of j's real address (each node's own entry stays real,
// for its bind). Cutting a link stops its proxies forwarding in both
// directions, bytes held, connections kept, as a network that black-holes
// packets does (TCP would retransmit them): ZooKeeper then notices by its
// own timeouts (syncLimit × tickTime), as it would on a real partition.
// Healing forwards again. zkbridge's partitions discard messages on
// arrival in its transport (peernet.Faults) to the same effect.

// linkProxy forwards one directed link's connections to a target port.
type linkProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	resumed *sync.Cond
	conns   map[net.Conn]struct{}
	closed  bool
}

// newLinkProxy listens on a free loopback port (port) for target.
func newLinkProxy(target int) (*linkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zookeeper peer proxy for port %d: %w", target, err)
	}
	p := &linkProxy{ln: ln, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(target)), conns: map[net.Conn]struct{}{}}
	p.resumed = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

func (p *linkProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *linkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *linkProxy) serve(c net.Conn) {
	// A connection opened while the link is cut waits, like a SYN that
	// gets no answer, until the link heals or its dialer gives up.
	if !p.wait() {
		c.Close()
		return
	}
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, t) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(t, c); done <- struct{}{} }()
	go func() { p.copy(c, t); done <- struct{}{} }()
	<-done
	c.Close()
	t.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, t)
	p.mu.Unlock()
}

func (p *linkProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// wait blocks while the link is cut; false once the proxy closed.
func (p *linkProxy) wait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.cut && !p.closed {
		p.resumed.Wait()
	}
	return !p.closed
}

// copy forwards src to dst, holding what it read while the link is cut.
func (p *linkProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: serve closes both
		}
	}
}

func (p *linkProxy) setCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	p.mu.Unlock()
	p.resumed.Broadcast()
}

func (p *linkProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.resumed.Broadcast()
	p.ln.Close()
}

// peerProxies are the proxies of an ensemble of n nodes: links[i][j] holds
// node i's proxies to node j's quorum and election ports.
type peerProxies struct {
	n     int
	links map[[2]int][]*linkProxy
}

// startPeerProxies starts the proxies of an ensemble whose nodes use ports
// (client, quorum, election per node, in myid order) and returns each
// node's zoo.cfg server lines: its own entry real, its peers' through its
// proxies.
func startPeerProxies(ports []int) (*peerProxies, []string, error) {
	n := len(ports) / 3
	pp := &peerProxies{n: n, links: map[[2]int][]*linkProxy{}}
	servers := make([]string, n)
	for i := 0; i < n; i++ {
		var lines []string
		for j := 0; j < n; j++ {
			c, q, e := ports[3*j], ports[3*j+1], ports[3*j+2]
			if j != i {
				for _, target := range []*int{&q, &e} {
					lp, err := newLinkProxy(*target)
					if err != nil {
						pp.close()
						return nil, nil, err
					}
					pp.links[[2]int{i, j}] = append(pp.links[[2]int{i, j}], lp)
					*target = lp.port()
				}
			}
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d", j+1, q, e, c))
		}
		servers[i] = strings.Join(lines, "\n")
	}
	return pp, servers, nil
}

// cutLink cuts (or heals) both directions between nodes a and b.
func (pp *peerProxies) cutLink(a, b int, cut bool) {
	for _, k := range [][2]int{{a, b}, {b, a}} {
		for _, p := range pp.links[k] {
			p.setCut(cut)
		}
	}
}

func (pp *peerProxies) isolate(i int) {
	for j := 0; j < pp.n; j++ {
		if j != i {
			pp.cutLink(i, j, true)
		}
	}
}

func (pp *peerProxies) heal() {
	for _, ps := range pp.links {
		for _, p := range ps {
			p.setCut(false)
		}
	}
}

func (pp *peerProxies) close() {
	for _, ps := range pp.links {
		for _, p := range ps {
			p.close()
		}
	}
}
