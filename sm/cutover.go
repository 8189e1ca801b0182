package sm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Cutover policies fence subtrees during a move from ZooKeeper-mode
// servers to native RPCs: under a subtree in mode native, writes that do
// not come through the native API are refused with NoAuth, so a stale
// ZooKeeper-mode server cannot write behind the native ones; in mode
// read-only every write is refused. They are replicated state (one 'm'
// key), checked here in apply, so no write slips past a fence raised
// concurrently, and they survive restarts and snapshots.

// CutoverMode is who may write under a subtree.
type CutoverMode byte

// Cutover modes. Never renumber: they are in the Raft log and the state.
const (
	CutoverZK       CutoverMode = 0 // both protocols write (no policy)
	CutoverNative   CutoverMode = 1 // only native writes
	CutoverReadOnly CutoverMode = 2 // nobody writes
)

func (m CutoverMode) String() string {
	switch m {
	case CutoverZK:
		return "zk"
	case CutoverNative:
		return "native"
	case CutoverReadOnly:
		return "read-only"
	}
	return fmt.Sprintf("mode(%d)", byte(m))
}

// ParseCutoverMode reads "zk", "native" or "read-only".
func ParseCutoverMode(s string) (CutoverMode, error) {
	switch s {
	case "zk":
		return CutoverZK, nil
	case "native":
		return CutoverNative, nil
	case "read-only":
		return CutoverReadOnly, nil
	}
	return 0, fmt.Errorf("cutover mode %q: want zk, native or read-only", s)
}

// CutoverPolicy is one subtree's mode.
type CutoverPolicy struct {
	Path string
	Mode CutoverMode
}

// NativeOrigin is the identity the native API puts in the header of its
// writes. No ZooKeeper client can hold it: the ZooKeeper door grants only
// ip, digest and super identities.
var NativeOrigin = zkproto.Id{Scheme: "zkbridge", ID: "native"}

// SetCutover sets the mode of the subtree at Path; CutoverZK removes its
// policy. The subtree need not exist.
type SetCutover struct {
	Path string
	Mode CutoverMode
}

var keyCutover = []byte("mcutover")

func encodePolicies(ps []CutoverPolicy) []byte {
	e := &enc{}
	e.uvar(uint64(len(ps)))
	for _, p := range ps {
		e.str(p.Path)
		e.u8(byte(p.Mode))
	}
	return e.b
}

func decodePolicies(b []byte) ([]CutoverPolicy, error) {
	if b == nil {
		return nil, nil
	}
	d := &dec{b: b}
	n := d.count()
	out := make([]CutoverPolicy, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, CutoverPolicy{Path: d.str(), Mode: CutoverMode(d.u8())})
	}
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("cutover policies: %w", err)
	}
	return out, nil
}

// cutoverPolicies reads the policies once per batch (and again after a
// SetCutover in it).
func (a *applier) cutoverPolicies() ([]CutoverPolicy, error) {
	if !a.policiesRead {
		b, err := a.t.get(keyCutover)
		if err != nil {
			return nil, err
		}
		if a.policies, err = decodePolicies(b); err != nil {
			return nil, err
		}
		a.policiesRead = true
	}
	return a.policies, nil
}

// policyFor is the mode of the deepest policy covering path.
func policyFor(ps []CutoverPolicy, path string) CutoverMode {
	mode, depth := CutoverZK, -1
	for _, p := range ps {
		if (p.Path == "/" || path == p.Path || strings.HasPrefix(path, p.Path+"/")) && len(p.Path) > depth {
			mode, depth = p.Mode, len(p.Path)
		}
	}
	return mode
}

// fence refuses a write to path that its subtree's policy does not admit
// (NoAuth), and marks the entry fenced.
func (a *applier) fence(path string) (zkproto.ErrCode, error) {
	ps, err := a.cutoverPolicies()
	if err != nil || len(ps) == 0 {
		return zkproto.ErrOK, err
	}
	switch policyFor(ps, path) {
	case CutoverReadOnly:
		a.fenced = true
		return zkproto.ErrNoAuth, nil
	case CutoverNative:
		for _, id := range a.hdr.Auth {
			if id == NativeOrigin {
				return zkproto.ErrOK, nil
			}
		}
		a.fenced = true
		return zkproto.ErrNoAuth, nil
	}
	return zkproto.ErrOK, nil
}

// setCutover stores a subtree's mode (sorted by path; zk removes it).
func (a *applier) setCutover(o *SetCutover) (zkproto.ErrCode, error) {
	if !validPath(o.Path) || o.Mode > CutoverReadOnly {
		return zkproto.ErrBadArguments, nil
	}
	ps, err := a.cutoverPolicies()
	if err != nil {
		return 0, err
	}
	next := make([]CutoverPolicy, 0, len(ps)+1)
	for _, p := range ps {
		if p.Path != o.Path {
			next = append(next, p)
		}
	}
	if o.Mode != CutoverZK {
		next = append(next, CutoverPolicy{Path: o.Path, Mode: o.Mode})
	}
	sort.Slice(next, func(i, j int) bool { return next[i].Path < next[j].Path })
	if len(next) == 0 {
		a.t.del(keyCutover)
	} else {
		a.t.set(keyCutover, encodePolicies(next))
	}
	a.policies, a.policiesRead = next, true
	return zkproto.ErrOK, nil
}

// CutoverPolicies returns every policy, sorted by path.
func (v *View) CutoverPolicies() ([]CutoverPolicy, error) {
	b, err := readRaw(v.snap, keyCutover)
	if err != nil {
		return nil, err
	}
	return decodePolicies(b)
}
