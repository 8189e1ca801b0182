package faults

import (
	"fmt"
	"net"
	"strconv"
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

func newLinkProxy(port int, target string) (*linkProxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("zookeeper peer proxy on %d: %w", port, err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.resumed = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

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
