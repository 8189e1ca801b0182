package sm

// TTLNode is a TTL node without children as the reaper sees it: its TTL
// and the zxid of its last modification (which ReapTTL's Mzxid guards).
type TTLNode struct {
	Path  string
	TTL   int64 // ms
	Mzxid int64
}

// TTLNodes calls fn, in path order, for every TTL node without children
// (a node with children never expires). The leader's reaper measures how
// long each stays at its Mzxid on its own monotonic clock instead of
// comparing wall-clock stamps (see ReapTTL).
func (v *View) TTLNodes(fn func(TTLNode) error) error {
	return scanKeys(v.snap, []byte{spaceTTL}, []byte{spaceTTL + 1}, func(k []byte) error {
		p := string(k[1:])
		n, err := v.node(p)
		if err != nil || n == nil || n.kind != kindTTLNode || n.numChildren > 0 {
			return err
		}
		return fn(TTLNode{Path: p, TTL: n.ttl, Mzxid: n.mzxid})
	})
}
