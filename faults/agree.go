package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// replicaView is what one node serves of the workloads' znodes once it
// has caught up (after a sync): every replica must serve the same.
func replicaView(addr string) (string, error) {
	conn, ev, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline := time.After(20 * time.Second)
	for connected := false; !connected; {
		select {
		case e := <-ev:
			connected = e.State == zk.StateHasSession
		case <-deadline:
			return "", fmt.Errorf("no session with %s within 20 s", addr)
		}
	}
	if _, err := conn.Sync("/"); err != nil {
		return "", fmt.Errorf("sync: %w", err)
	}
	var parts []string
	for _, p := range []string{"/counter", "/reg0", "/reg1", "/reg2"} {
		data, st, err := conn.Get(p)
		if err != nil {
			return "", fmt.Errorf("get %s: %w", p, err)
		}
		parts = append(parts, fmt.Sprintf("%s=%x@v%d", p, data, st.Version))
	}
	kids, st, err := conn.Children("/set")
	if err != nil {
		return "", fmt.Errorf("children /set: %w", err)
	}
	sort.Strings(kids)
	parts = append(parts, fmt.Sprintf("/set:%d children (cversion %d, last %v)", len(kids), st.Cversion, kids[max(0, len(kids)-1):]))
	return strings.Join(parts, " "), nil
}

// checkReplicas compares every node's view; a node that cannot serve one
// is reported too (it must refuse or recover, and here it did neither in
// time).
func checkReplicas(addrs []string, down func(int) bool) []string {
	views := make([]string, len(addrs))
	var out []string
	for i, a := range addrs {
		if down(i) {
			continue
		}
		v, err := replicaView(a)
		if err != nil {
			out = append(out, fmt.Sprintf("replicas: node %d serves no view: %v", i+1, err))
			continue
		}
		views[i] = v
	}
	first := -1
	for i, v := range views {
		switch {
		case v == "":
		case first < 0:
			first = i
		case v != views[first]:
			out = append(out, fmt.Sprintf("replicas: node %d serves %q, node %d %q", i+1, v, first+1, views[first]))
		}
	}
	return out
}
