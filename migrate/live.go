package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// A live migration: export+import, then catch-up passes that compare both
// trees and send the source's changes (ImportUpdate: overwrite, create,
// delete) until a pass finds nothing, then a final pass. Imported sessions
// are heartbeated on the target while it runs.

// LiveOptions shape a live migration.
type LiveOptions struct {
	Export ExportOptions
	Target *Target
	// TargetZK reads the target through its ZooKeeper client port.
	TargetZK *zk.Conn
	// Pause between passes.
	Pause time.Duration
	// UntilQuiet ends after the first pass that finds no difference;
	// otherwise passes go on until Final is closed.
	UntilQuiet bool
	Final      <-chan struct{}
	// Pass reports each catch-up pass.
	Pass func(PassReport)
	// Fence makes the migrated subtree read-only on ZooKeeper before the
	// final pass (fence.go).
	Fence bool
	// Merge imports into a non-empty target (a rerun): the catch-up passes
	// then overwrite whatever differs.
	Merge bool
	// FinalWithin bounds the final passes (0: until one finds nothing):
	// past it, Live finishes and reports what the last pass still found
	// (writers still running on ZooKeeper).
	FinalWithin time.Duration
}

// PassReport is one catch-up pass: the differences it found and sent
// (the remaining lag of the pass before).
type PassReport struct {
	Pass     int   `json:"pass"`
	Changed  int64 `json:"changed"` // nodes created or overwritten
	Deleted  int64 `json:"deleted"`
	Sessions int64 `json:"sessions"`
	Final    bool  `json:"final"`
}

// LiveResult sums a live migration up.
type LiveResult struct {
	Initial ImportStats `json:"initial"`
	Fenced  int         `json:"fenced"` // nodes left read-only on ZooKeeper
	// Lag is what the last pass still found when FinalWithin ended the
	// final passes (0: the last pass found nothing).
	Lag      int64 `json:"lag"`
	Passes   int   `json:"passes"`
	LastZxid int64 `json:"last_zxid"`
}

// Live runs the migration; it returns after the final pass.
func Live(ctx context.Context, o LiveOptions) (_ *LiveResult, err error) {
	res := &LiveResult{}
	im, err := o.Target.NewImporter(ctx, ImporterOptions{Merge: o.Merge})
	if err != nil {
		return nil, err
	}
	ka := newKeepAlive(o.Target)
	defer ka.stop()
	conn, err := Dial(o.Export.Hosts, o.Export.Auth, o.Export.Timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	o.Export.ownSessions = append(o.Export.ownSessions, conn.SessionID())
	var source int64
	end, err := Export(ctx, o.Export, func(h Header) error {
		source = h.LastZxid
		return o.Target.Begin(ctx, h.Path, o.Merge, h.LastZxid)
	}, sessionTap{im, ka})
	if err != nil {
		im.Abort()
		return nil, err
	}
	if res.Initial, err = im.Close(); err != nil {
		return nil, importFailed(err)
	}
	source = max(source, end.LastZxid)
	final := false
	f := &fence{conn: conn, nodes: map[string]fencedACL{}}
	raised := false
	defer func() {
		if raised && err != nil {
			if lerr := f.lower(); lerr != nil {
				err = fmt.Errorf("%w; and the fence could not be lowered: %v", err, lerr)
			} else {
				err = fmt.Errorf("%w (the fence on ZooKeeper was lowered again)", err)
			}
		}
	}()
	var finalSince time.Time
	for pass := 1; ; pass++ {
		if !final {
			select {
			case <-o.Final:
				final = true
			case <-ctx.Done():
				return nil, ctx.Err()
			default:
			}
		}
		if final && finalSince.IsZero() {
			finalSince = time.Now()
		}
		if final && o.Fence && !raised {
			raised = true
			if err = f.raise(ctx, o.Export.Path); err != nil {
				return nil, err
			}
			res.Fenced = len(f.nodes)
		}
		rep, last, err := catchUp(ctx, o, conn, ka, f)
		if err != nil {
			return nil, fmt.Errorf("catch-up pass %d: %w", pass, err)
		}
		source = max(source, last)
		rep.Pass, rep.Final = pass, final
		res.Passes = pass
		if o.Pass != nil {
			o.Pass(rep)
		}
		quiet := rep.Changed == 0 && rep.Deleted == 0
		if final && quiet {
			break
		}
		if final && o.FinalWithin > 0 && time.Since(finalSince) > o.FinalWithin {
			res.Lag = rep.Changed + rep.Deleted
			break
		}
		if quiet && o.UntilQuiet && !final {
			final = true // one more pass (after the fence), then done
			continue
		}
		if !quiet && final {
			continue // the final pass found changes: run until one finds none
		}
		select {
		case <-time.After(o.Pause):
		case <-o.Final:
			final = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if res.LastZxid, err = o.Target.Finish(ctx, source); err != nil {
		return nil, err
	}
	ka.touchAll() // a fresh deadline for every imported session
	return res, nil
}

// catchUp runs one pass: reads both trees, sends the differences.
func catchUp(ctx context.Context, o LiveOptions, conn *zk.Conn, ka *keepAlive, f *fence) (PassReport, int64, error) {
	var rep PassReport
	state, err := ReadSourceState(o.Export.Hosts, o.Export.DefaultSessionTimeout, o.Export.Timeout, append(o.Export.ownSessions, conn.SessionID())...)
	if err != nil {
		return rep, 0, err
	}
	up, err := o.Target.NewImporter(ctx, ImporterOptions{Update: true})
	if err != nil {
		return rep, 0, err
	}
	for _, s := range sortedSessions(state.Sessions) {
		if !ka.has(s.ID) {
			ka.add(s)
			_ = up.Session(s)
			rep.Sessions++
		}
	}
	var deletes []string
	var changed []*Node
	alive := map[int64]bool{}
	for id := range state.Sessions {
		alive[id] = true
	}
	src, dst := &TreeReader{Conn: conn}, &TreeReader{Conn: o.TargetZK}
	workers := max(o.Export.Workers, 32)
	// Stats first (one getChildren2 a node on each side); a node whose
	// stat differs is read whole from the source.
	err = walkPairs(ctx, src, dst, o.Export.Path, workers, (*TreeReader).ReadStat, func(p string, x *pairRead) ([]string, error) {
		if x.s == nil {
			if x.t != nil && migratable(p) {
				sub, err := subtree(ctx, dst, p)
				if err != nil {
					return nil, err
				}
				deletes = append(deletes, sub...)
			}
			return nil, nil
		}
		alive[x.s.EphemeralOwner] = true
		f.unfenced(x.s)
		if migratable(p) && (x.t == nil || !sameStat(x.s, x.t)) {
			full, _, err := src.ReadNode(p)
			if errors.Is(err, errSkip) {
				return nil, nil // deleted meanwhile: the next pass sees it
			}
			if err != nil {
				return nil, err
			}
			f.unfenced(full)
			if full.EphemeralOwner != 0 && !ka.has(full.EphemeralOwner) {
				s := Session{ID: full.EphemeralOwner, Timeout: o.Export.DefaultSessionTimeout}
				ka.add(s)
				_ = up.Session(s)
				rep.Sessions++
			}
			changed = append(changed, full)
		}
		var next []string
		if descend(p) {
			for _, k := range x.sKids {
				next = append(next, joinPath(p, k))
			}
			for _, k := range x.tKids {
				if !slices.Contains(x.sKids, k) {
					next = append(next, joinPath(p, k))
				}
			}
		}
		return next, nil
	})
	if err != nil {
		up.Abort()
		return rep, 0, err
	}
	ka.retain(alive) // a session gone from the source expires on the target too
	// Deletes first, deepest first; then creates and overwrites, parents
	// first; the root's stat last.
	slices.Reverse(deletes)
	for _, p := range deletes {
		_ = up.Delete(p)
		rep.Deleted++
	}
	var last int64
	for _, n := range changed {
		last = max(last, n.Mzxid, n.Pzxid, n.Czxid)
		if err := up.Node(n); err != nil {
			return rep, 0, importFailed(err)
		}
		rep.Changed++
	}
	if _, err := up.Close(); err != nil {
		return rep, 0, importFailed(err)
	}
	return rep, max(last, state.LastZxid), nil
}

// subtree lists p and everything below it in the target, parents first.
func subtree(ctx context.Context, r *TreeReader, p string) ([]string, error) {
	var out []string
	err := r.Walk(ctx, p, func(n *Node) error { out = append(out, n.Path); return nil })
	return out, err
}

// sessionTap feeds an importer and registers sessions for keep-alive.
type sessionTap struct {
	im *Importer
	ka *keepAlive
}

func (t sessionTap) Session(s Session) error { t.ka.add(s); return t.im.Session(s) }
func (t sessionTap) Node(n *Node) error      { return t.im.Node(n) }

// keepAlive heartbeats imported sessions on the target so that they do not
// expire while their clients are still on the source.
type keepAlive struct {
	t        *Target
	mu       sync.Mutex
	sessions map[int64]int32
	done     chan struct{}
	wg       sync.WaitGroup
}

func newKeepAlive(t *Target) *keepAlive {
	k := &keepAlive{t: t, sessions: map[int64]int32{}, done: make(chan struct{})}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-k.done:
				return
			case <-tick.C:
				k.touchAll()
			}
		}
	}()
	return k
}

func (k *keepAlive) add(s Session) {
	k.mu.Lock()
	k.sessions[s.ID] = s.Timeout
	k.mu.Unlock()
}

// retain stops heartbeating the sessions not in alive.
func (k *keepAlive) retain(alive map[int64]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for id := range k.sessions {
		if !alive[id] {
			delete(k.sessions, id)
		}
	}
}

func (k *keepAlive) has(id int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.sessions[id]
	return ok
}

// touchAll heartbeats every session once (a session not imported yet, or
// gone, is skipped).
func (k *keepAlive) touchAll() {
	k.mu.Lock()
	ids := make([]int64, 0, len(k.sessions))
	for id := range k.sessions {
		ids = append(ids, id)
	}
	k.mu.Unlock()
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = k.t.api.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{LeaseId: id})
		cancel()
	}
}

func (k *keepAlive) stop() {
	close(k.done)
	k.wg.Wait()
}
