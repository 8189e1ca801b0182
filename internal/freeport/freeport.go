package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are drawn at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): the kernel never hands those out on its
// own, so neither an outgoing connection's local port nor another test's
// bind to port 0 can take one between the probe here and the server's
// bind. Above lowest, to stay clear of well-known services.
const lowest = 10000

// attempts bounds the random draws before giving up.
const attempts = 1000

var (
	mu      sync.Mutex
	claimed = map[int]bool{} // handed out by this process: never twice
)

// Pick returns a port that was free a moment ago on every one of hosts
// (loopback addresses; none: 127.0.0.1), never one it returned before in
// this process.
func Pick(hosts ...string) (int, error) {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	hi := ephemeralStart()
	if hi-lowest < 1000 {
		return 0, errors.New("freeport: fewer than 1000 ports below the ephemeral range (net.ipv4.ip_local_port_range)")
	}
	for i := 0; i < attempts; i++ {
		port := lowest + rand.IntN(hi-lowest)
		if claim(port) && freeOn(port, hosts) {
			return port, nil
		}
	}
	return 0, errors.New("freeport: no port free on every host below the ephemeral range")
}

// PickN returns n distinct ports as Pick does.
func PickN(n int, hosts ...string) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := Pick(hosts...)
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// freeOn probes port by binding it on each host (all held open together).
func freeOn(port int, hosts []string) bool {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for _, h := range hosts {
		l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		held = append(held, l)
	}
	return true
}

func claim(port int) bool {
	mu.Lock()
	defer mu.Unlock()
	if claimed[port] {
		return false
	}
	claimed[port] = true
	return true
}

// ephemeralStart is the lowest port the kernel picks on its own (Linux's
// default, 32768, when the setting cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
