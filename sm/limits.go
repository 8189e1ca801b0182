package sm

import "github.com/zkbridge/zkbridge/zkproto"

// WithinLimits carries a tenant's znode and byte limits with a write
// (Create, SetData, Multi or Increment, or a migration import's batch:
// ImportNodes, ImportUpdate), so that apply enforces them on
// the replicated tree: writes proposed at once from many connections and
// nodes are admitted one after another against the sizes every replica
// has, and the tenant never ends past its limit. The limits travel in the
// command, as the proposer's time does, because the registry that holds
// them is another shard's state; apply reads nothing else. 0 means no
// limit.
type WithinLimits struct {
	MaxZnodes, MaxBytes int64
	Op                  Op
}

// Limit wraps op in the limits when it is a write that may grow the tree
// (limited reports whether it did); other ops are returned as they are.
func Limit(op Op, maxZnodes, maxBytes int64) (_ Op, limited bool) {
	if maxZnodes <= 0 && maxBytes <= 0 {
		return op, false
	}
	if limitable(op) {
		return &WithinLimits{MaxZnodes: maxZnodes, MaxBytes: maxBytes, Op: op}, true
	}
	return op, false
}

// limitable says whether op may be carried by WithinLimits.
func limitable(op Op) bool {
	switch op.(type) {
	case *Create, *SetData, *Multi, *Increment, *ImportNodes, *ImportUpdate:
		return true
	}
	return false
}

// limitedWrite applies o.Op and undoes it, answering QuotaExceeded, when
// it took the tree's znodes or bytes up and past a limit. Bytes are
// ZooKeeper's approximate data size (path plus data of every node, mntr's
// zk_approximate_data_size). A write that shrinks the tree or leaves it
// as it was is always admitted, so a tenant over a lowered limit can
// still delete and trim. A refused write changes nothing but, like every
// write, consumes its zxid (an error transaction, as ZooKeeper's quota
// refusals are).
func (a *applier) limitedWrite(o *WithinLimits, res *Result) error {
	var err error
	switch op := o.Op.(type) {
	case *ImportNodes:
		// An import batch into a tenant counts as the writes it stands
		// for: the whole batch is refused when it would take the tenant
		// past a limit.
		a.importing = true
		err = a.importNodes(op, res)
		a.importing = false
	case *ImportUpdate:
		a.importing = true
		err = a.importUpdate(op, res)
		a.importing = false
	default:
		err = a.clientOp(o.Op, res)
	}
	if err != nil {
		return err
	}
	grew := a.sizes
	after := a.before
	after.plus(grew)
	over := (o.MaxZnodes > 0 && grew.Nodes > 0 && after.Nodes > o.MaxZnodes) ||
		(o.MaxBytes > 0 && grew.DataBytes > 0 && after.DataBytes > o.MaxBytes)
	if !over {
		return nil
	}
	a.t.reset()
	a.events = a.events[:0]
	a.changes = a.changes[:0]
	a.sizes = TreeStats{}
	a.fenced = false
	*res = Result{Index: res.Index, Zxid: res.Zxid, Err: zkproto.ErrQuotaExceeded}
	return nil
}
