package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
)

// Tenant rebalance: after a node joins the cluster, move tenant replicas
// onto it until every voter hosts about as many tenant shards as another
// (no two differ by more than one), then spread the leaders.
//
// One move of tenant T from node A to node N, in this order, so that the
// registry always lists every member of T's Raft shard (a node removes a
// tenant's data only when the registry no longer places the tenant on it,
// so the registry must never drop a replica dragonboat still counts):
//
//  1. registry: N added to T's replicas, marked joining, A marked leaving;
//  2. dragonboat: N added as a non-voting member (N's node, seeing itself
//     joining, starts its replica non-voting and waits to be contacted; it
//     catches up by snapshot streaming and the log);
//  3. wait until N has applied what T had committed when it was added;
//  4. dragonboat: N promoted to voter; registry: N no longer joining;
//  5. if A leads T, leadership moves to N; dragonboat: A removed;
//  6. registry: A dropped from T's replicas. A's node then stops its
//     replica and removes the shard's data; it serves T's port by
//     forwarding from then on.
//
// Every step is idempotent and the move's intent is in the registry, so an
// interrupted rebalance (the command killed, the node asked restarted) is
// resumed by the next one: it first finishes every move the registry
// records as in progress, then plans again.

// RebalanceMove is one replica move of a plan.
type RebalanceMove struct {
	Tenant string `json:"tenant"`
	From   uint64 `json:"from"`
	To     uint64 `json:"to"`
}

// RebalanceEvent is one line of a rebalance's progress.
type RebalanceEvent struct {
	// Step: plan, resume, adding, catching_up, promoting,
	// transferring_leader, removing, done, failed, leader, summary.
	Step   string `json:"step"`
	Tenant string `json:"tenant,omitempty"`
	From   uint64 `json:"from,omitempty"`
	To     uint64 `json:"to,omitempty"`
	// Applied and Target: a joining replica's applied index and the index
	// it must reach (catching_up).
	Applied uint64           `json:"applied,omitempty"`
	Target  uint64           `json:"target,omitempty"`
	Plan    []RebalanceMove  `json:"plan,omitempty"`
	Message string           `json:"message,omitempty"`
	Error   string           `json:"error,omitempty"`
	Summary *RebalanceResult `json:"summary,omitempty"`
}

// RebalanceResult is a rebalance's summary.
type RebalanceResult struct {
	DryRun  bool `json:"dry_run"`
	Resumed int  `json:"resumed"` // moves an earlier run left unfinished, finished now
	Planned int  `json:"planned"`
	Moved   int  `json:"moved"`
	Failed  int  `json:"failed"`
	// LeaderTransfers counts the leaderships moved to spread the leaders.
	LeaderTransfers int `json:"leader_transfers"`
	// Replicas and Leaders per voter after the run (Leaders: the default
	// tenant's and those of the tenants this node hosts).
	Replicas map[uint64]int `json:"replicas"`
	Leaders  map[uint64]int `json:"leaders"`
	Seconds  float64        `json:"seconds"`
}

// ErrNotHosted: a move of a tenant the node asked does not host.
var ErrNotHosted = errors.New("this node does not host the tenant")

// planRebalance moves replicas from the most loaded voters (tenant shards
// hosted) to the least loaded, one at a time, until no two voters differ
// by more than one; a replica on a node that is no longer a voter moves
// first. A shard never goes back to a node dragonboat removed it from
// (removed[tenant][id]), nor to a node already hosting it. Deterministic:
// tenants in name order, nodes by load then id.
func planRebalance(voters []uint64, tenants []sm.Tenant, removed map[string]map[uint64]bool) []RebalanceMove {
	isVoter := map[uint64]bool{}
	load := map[uint64]int{}
	for _, id := range voters {
		isVoter[id] = true
		load[id] = 0
	}
	placed := make([][]uint64, len(tenants))
	for i, t := range tenants {
		placed[i] = slices.Clone(t.Replicas)
		for _, id := range t.Replicas {
			if isVoter[id] {
				load[id]++
			}
		}
	}
	order := slices.Clone(voters)
	byLoad := func() {
		slices.SortFunc(order, func(a, b uint64) int {
			if load[a] != load[b] {
				return cmp.Compare(load[a], load[b])
			}
			return cmp.Compare(a, b)
		})
	}
	canTake := func(i int, id uint64) bool {
		return !slices.Contains(placed[i], id) && !removed[tenants[i].Name][id]
	}
	var plan []RebalanceMove
	move := func(i int, from, to uint64) {
		plan = append(plan, RebalanceMove{Tenant: tenants[i].Name, From: from, To: to})
		placed[i][slices.Index(placed[i], from)] = to
		if isVoter[from] {
			load[from]--
		}
		load[to]++
	}
	// Replicas on nodes that left the cluster go to the least loaded voter.
	for i := range tenants {
		for _, from := range slices.Clone(placed[i]) {
			if isVoter[from] {
				continue
			}
			byLoad()
			for _, to := range order {
				if canTake(i, to) {
					move(i, from, to)
					break
				}
			}
		}
	}
	for range len(tenants) * max(1, len(voters)) { // bounded: each move narrows the spread
		byLoad()
		moved := false
		for hi := len(order) - 1; hi > 0 && !moved; hi-- {
			for lo := 0; lo < hi && !moved; lo++ {
				from, to := order[hi], order[lo]
				if load[from]-load[to] <= 1 {
					break
				}
				for i := range tenants {
					if slices.Contains(placed[i], from) && canTake(i, to) {
						move(i, from, to)
						moved = true
						break
					}
				}
			}
		}
		if !moved {
			break
		}
	}
	return plan
}

// RebalanceTenants resumes unfinished moves, plans and (unless dryRun)
// carries out the replica moves, then spreads the leaders, reporting each
// step to emit. ctx bounds the run: a cancelled run stops between steps
// and the next run resumes it.
func (s *Server) RebalanceTenants(ctx context.Context, dryRun bool, emit func(RebalanceEvent)) (RebalanceResult, error) {
	started := time.Now()
	res := RebalanceResult{DryRun: dryRun}
	// A registry read after this replica caught up: the plan must see every
	// move and tenant the leader has.
	if err := s.node.CatchUp(ctx); err != nil {
		return res, fmt.Errorf("rebalance: catch up with the leader: %w", err)
	}
	m, err := s.node.RefreshMembership(ctx)
	if err != nil {
		return res, fmt.Errorf("rebalance: read the cluster's voters: %w", err)
	}
	voters := make([]uint64, 0, len(m.Voters))
	for id := range m.Voters {
		voters = append(voters, id)
	}
	slices.Sort(voters)
	list, err := s.node.Tenants()
	if err != nil {
		return res, err
	}
	// Moves an earlier run left unfinished come first.
	for _, t := range list {
		if len(t.Joining) == 0 && len(t.Leaving) == 0 {
			continue
		}
		var mv RebalanceMove
		mv.Tenant = t.Name
		if len(t.Joining) > 0 {
			mv.To = t.Joining[0]
		}
		if len(t.Leaving) > 0 {
			mv.From = t.Leaving[0]
		}
		emit(RebalanceEvent{Step: "resume", Tenant: t.Name, From: mv.From, To: mv.To,
			Message: "a move an earlier rebalance left unfinished"})
		if dryRun {
			continue
		}
		if err := s.moveReplica(ctx, mv, emit); err != nil {
			res.Failed++
			emit(RebalanceEvent{Step: "failed", Tenant: t.Name, From: mv.From, To: mv.To, Error: err.Error()})
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			continue
		}
		res.Resumed++
	}
	if list, err = s.node.Tenants(); err != nil {
		return res, err
	}
	// Where this node hosts a tenant, it knows which nodes its shard removed.
	removed := map[string]map[uint64]bool{}
	for _, t := range list {
		if tn := s.Tenant(t.Name); tn != nil {
			if members, err := tn.ShardMembers(ctx); err == nil {
				removed[t.Name] = members.Removed
			}
		}
	}
	plan := planRebalance(voters, list, removed)
	res.Planned = len(plan)
	emit(RebalanceEvent{Step: "plan", Plan: plan, Message: fmt.Sprintf("%d moves over voters %v", len(plan), voters)})
	if !dryRun {
		for _, mv := range plan {
			if err := s.moveReplica(ctx, mv, emit); err != nil {
				res.Failed++
				emit(RebalanceEvent{Step: "failed", Tenant: mv.Tenant, From: mv.From, To: mv.To, Error: err.Error()})
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				continue
			}
			res.Moved++
		}
		res.LeaderTransfers = s.spreadTenantLeaders(ctx, emit)
	}
	res.Replicas = map[uint64]int{}
	for _, id := range voters {
		res.Replicas[id] = 0
	}
	// The moves were recorded through other nodes too: read the registry
	// once this replica has caught up with them.
	if err := s.node.CatchUp(ctx); err != nil {
		return res, fmt.Errorf("rebalance: catch up with the leader for the summary: %w", err)
	}
	if list, err = s.node.Tenants(); err == nil {
		for _, t := range list {
			for _, id := range t.Replicas {
				res.Replicas[id]++
			}
		}
	}
	res.Leaders = s.leaderCounts(voters)
	res.Seconds = time.Since(started).Seconds()
	emit(RebalanceEvent{Step: "summary", Summary: &res})
	return res, nil
}

// catchUpPoll is how often a move asks the joining replica for its
// progress.
const catchUpPoll = 200 * time.Millisecond

// moveReplica carries out (or finishes) one move, step by step as the
// comment at the top says; a step already done is skipped. From 0: only
// the joining replica is finished; To 0: only the leaving one is removed.
func (s *Server) moveReplica(ctx context.Context, mv RebalanceMove, emit func(RebalanceEvent)) error {
	if tn := s.Tenant(mv.Tenant); tn != nil {
		return s.moveLocal(ctx, tn, mv, emit)
	}
	return s.moveRemote(ctx, mv, emit)
}

// moveRemote has a node hosting the tenant carry out the move (dragonboat
// changes a shard's membership only through one of its replicas), and
// passes its progress on.
func (s *Server) moveRemote(ctx context.Context, mv RebalanceMove, emit func(RebalanceEvent)) error {
	spec, err := s.node.LookupTenant(mv.Tenant)
	if err != nil {
		return err
	}
	if s.admin == nil {
		return fmt.Errorf("tenant %s: %w, and without an admin listener this node cannot ask one that does (replicas %v)", mv.Tenant, ErrNotHosted, spec.Replicas)
	}
	dir := s.node.Membership().Directory
	// A replica that stays first: the leaving one may be removed under it.
	var hosts []uint64
	for _, id := range spec.Replicas {
		if id != mv.From && !slices.Contains(spec.Joining, id) {
			hosts = append(hosts, id)
		}
	}
	if mv.From != 0 {
		hosts = append(hosts, mv.From)
	}
	form := url.Values{"tenant": {mv.Tenant}, "from": {strconv.FormatUint(mv.From, 10)}, "to": {strconv.FormatUint(mv.To, 10)}}
	var tried []string
	for _, id := range hosts {
		addr := dir[id].AdminAddr
		if addr == "" {
			continue
		}
		var failed error
		err := s.admin.PeerStream(ctx, addr, "/tenants/move", form, func(line []byte) error {
			var e RebalanceEvent
			if err := json.Unmarshal(line, &e); err != nil {
				return fmt.Errorf("node %d's answer %q: %w", id, line, err)
			}
			if e.Step == "error" {
				failed = fmt.Errorf("node %d: %s", id, e.Error)
				return nil
			}
			emit(e)
			return nil
		})
		if err == nil && failed == nil {
			return nil
		}
		if failed != nil {
			return failed // the hosting node tried and failed: its error
		}
		tried = append(tried, fmt.Sprintf("node %d: %v", id, err))
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("tenant %s: %w, and no node hosting it answered (%s)", mv.Tenant, ErrNotHosted, strings.Join(tried, "; "))
}

// moveLocal carries out a move through this node's replica of the tenant.
func (s *Server) moveLocal(ctx context.Context, tn *node.Node, mv RebalanceMove, emit func(RebalanceEvent)) error {
	spec, err := s.node.LookupTenant(mv.Tenant)
	if err != nil {
		return err
	}
	ev := func(step string) RebalanceEvent {
		return RebalanceEvent{Step: step, Tenant: mv.Tenant, From: mv.From, To: mv.To}
	}
	// place records a placement; a proposal whose outcome was unknown is
	// checked against the registry before it is tried again.
	place := func(replicas, joining, leaving []uint64) error {
		return retryStep(ctx, func(ctx context.Context) error {
			cur, err := s.node.LookupTenant(mv.Tenant)
			if err != nil {
				return err
			}
			spec = cur
			if slices.Equal(spec.Replicas, replicas) && slices.Equal(spec.Joining, joining) && slices.Equal(spec.Leaving, leaving) {
				return nil // the earlier attempt took effect
			}
			if spec, err = s.node.SetTenantPlacement(ctx, mv.Tenant, spec.Replicas, replicas, joining, leaving); err != nil {
				return err
			}
			s.tenants.poke()
			return nil
		})
	}
	if mv.To != 0 {
		emit(ev("adding"))
		if !slices.Contains(spec.Replicas, mv.To) {
			leaving := spec.Leaving
			if mv.From != 0 && !slices.Contains(leaving, mv.From) {
				leaving = append(slices.Clone(leaving), mv.From)
			}
			// The new replica goes last: forwarders try replicas in order.
			if err := place(append(slices.Clone(spec.Replicas), mv.To), appendNew(spec.Joining, mv.To), leaving); err != nil {
				return err
			}
		}
		addr, err := tn.ReplicaAddr(mv.To)
		if err != nil {
			return err
		}
		if err := retryStep(ctx, func(ctx context.Context) error { return tn.AddNonVotingReplica(ctx, mv.To, addr) }); err != nil {
			return err
		}
		if err := s.awaitCaughtUp(ctx, tn, mv, emit); err != nil {
			return err
		}
		emit(ev("promoting"))
		if err := retryStep(ctx, func(ctx context.Context) error { return tn.PromoteReplica(ctx, mv.To) }); err != nil {
			return err
		}
		if slices.Contains(spec.Joining, mv.To) {
			if err := place(spec.Replicas, without(spec.Joining, mv.To), spec.Leaving); err != nil {
				return err
			}
		}
	}
	if mv.From != 0 {
		if lead := tn.Raft(); lead.HasLeader && lead.LeaderID == mv.From {
			to := mv.To
			if to == 0 {
				for _, id := range spec.Replicas {
					if id != mv.From && !slices.Contains(spec.Joining, id) {
						to = id
						break
					}
				}
			}
			if to != 0 {
				emit(ev("transferring_leader"))
				tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := tn.TransferLeader(tctx, to)
				cancel()
				if err != nil && ctx.Err() == nil {
					// Removing a leader is safe (it steps down); only slower.
					emit(RebalanceEvent{Step: "transferring_leader", Tenant: mv.Tenant, Message: "transfer not done, removing the leader anyway: " + err.Error()})
				}
			}
		}
		emit(ev("removing"))
		if err := retryStep(ctx, func(ctx context.Context) error { return tn.RemoveReplica(ctx, mv.From) }); err != nil {
			return err
		}
		if slices.Contains(spec.Replicas, mv.From) || slices.Contains(spec.Leaving, mv.From) {
			if err := place(without(spec.Replicas, mv.From), spec.Joining, without(spec.Leaving, mv.From)); err != nil {
				return err
			}
		}
	}
	emit(ev("done"))
	return nil
}

// awaitCaughtUp waits until the joining replica has applied what the
// shard had committed when it was added, reporting its progress.
func (s *Server) awaitCaughtUp(ctx context.Context, tn *node.Node, mv RebalanceMove, emit func(RebalanceEvent)) error {
	target := tn.LocalProgress().CommitIndex
	var last uint64
	var lastErr error
	for {
		p, err := tn.ReplicaProgress(ctx, mv.To)
		if err == nil && (p.AppliedIndex != last || last == 0) {
			last = p.AppliedIndex
			emit(RebalanceEvent{Step: "catching_up", Tenant: mv.Tenant, From: mv.From, To: mv.To, Applied: min(p.AppliedIndex, target), Target: target})
		}
		if err == nil && p.AppliedIndex >= target {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("replica %d of tenant %s did not catch up (last answer: %v): %w", mv.To, mv.Tenant, lastErr, ctx.Err())
			}
			return fmt.Errorf("replica %d of tenant %s did not catch up (applied %d of %d): %w", mv.To, mv.Tenant, last, target, ctx.Err())
		case <-time.After(catchUpPoll):
		}
	}
}

// spreadTenantLeaders moves leaderships of the tenants this node hosts from
// the node leading the most shards (the default tenant's included) to a
// replica leading the fewest, until no node leads two more than another.
// It returns the transfers made.
func (s *Server) spreadTenantLeaders(ctx context.Context, emit func(RebalanceEvent)) int {
	voters := make([]uint64, 0)
	for id := range s.node.Membership().Voters {
		voters = append(voters, id)
	}
	transfers := 0
	for range 64 { // bounded; each transfer narrows the spread
		if ctx.Err() != nil {
			break
		}
		counts := s.leaderCounts(voters)
		moved := false
		for _, name := range s.hostedTenants() {
			tn := s.Tenant(name)
			if tn == nil {
				continue
			}
			st := tn.Raft()
			if !st.HasLeader {
				continue
			}
			spec, err := s.node.LookupTenant(name)
			if err != nil {
				continue
			}
			from := st.LeaderID
			var to uint64
			for _, id := range spec.Replicas {
				if _, voter := counts[id]; voter && id != from && !slices.Contains(spec.Joining, id) && (to == 0 || counts[id] < counts[to]) {
					to = id
				}
			}
			if to == 0 || counts[from] <= counts[to]+1 {
				continue
			}
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = tn.TransferLeader(tctx, to)
			cancel()
			if err != nil {
				emit(RebalanceEvent{Step: "leader", Tenant: name, From: from, To: to, Error: err.Error()})
				continue
			}
			transfers++
			emit(RebalanceEvent{Step: "leader", Tenant: name, From: from, To: to, Message: "leadership moved"})
			moved = true
			break
		}
		if !moved {
			break
		}
	}
	return transfers
}

// leaderCounts counts the shards each voter leads: the default tenant's
// and the tenants this node hosts.
func (s *Server) leaderCounts(voters []uint64) map[uint64]int {
	counts := map[uint64]int{}
	for _, id := range voters {
		counts[id] = 0
	}
	if st := s.node.Raft(); st.HasLeader {
		counts[st.LeaderID]++
	}
	for _, name := range s.hostedTenants() {
		if tn := s.Tenant(name); tn != nil {
			if st := tn.Raft(); st.HasLeader {
				counts[st.LeaderID]++
			}
		}
	}
	return counts
}

// hostedTenants names the tenants this node runs, in name order.
func (s *Server) hostedTenants() []string {
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	out := make([]string, 0, len(s.tenants.running))
	for name := range s.tenants.running {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// stepTimeout bounds one attempt of a step: a configuration change the
// leader dropped (one already pending, a leader transfer in progress: the
// leader spreading tenant leaderships) is never answered to a follower
// that proposed it, so it is asked again rather than waited for.
const stepTimeout = 5 * time.Second

// retryStep runs an idempotent step again after a failure (a leader
// change, a timeout, a dropped configuration change), a few times with a
// growing pause, while ctx allows.
func retryStep(ctx context.Context, step func(ctx context.Context) error) error {
	const attempts = 8
	var err error
	for i := 1; i <= attempts; i++ {
		actx, cancel := context.WithTimeout(ctx, stepTimeout)
		err = step(actx)
		cancel()
		if err == nil || errors.Is(err, node.ErrLastVoter) || errors.Is(err, node.ErrNoTenant) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i) * 250 * time.Millisecond):
		}
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

func without(ids []uint64, id uint64) []uint64 {
	out := make([]uint64, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func appendNew(ids []uint64, id uint64) []uint64 {
	if slices.Contains(ids, id) {
		return ids
	}
	return append(slices.Clone(ids), id)
}
