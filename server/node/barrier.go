package node

import (
	dbsm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/zkbridge/zkbridge/sm"
)

// ApplyBarrier lets a front door run work at an exact place in the log, on
// the state just before a given entry is applied. The ZooKeeper door uses
// it for reads that must see their session's earlier writes and none of
// its later ones (server/zk, deferred.go).
//
// Both methods run on the apply path with the apply lock held exclusively:
// they must not block on anything that waits for an apply.
type ApplyBarrier interface {
	// Armed is the fast check before a batch: false means Before need not
	// be asked for any entry of it.
	Armed() bool
	// Before returns the work that must run on the state before the entry
	// whose encoded command is cmd, or nil when there is none.
	Before(cmd []byte) func()
}

// barrierUpdate applies ents, splitting the batch before every entry some
// armed barrier has work for, and running that work there. It runs with
// the apply lock held exclusively.
func barrierUpdate(s *sm.StateMachine, barriers []ApplyBarrier, ents []dbsm.Entry) ([]dbsm.Entry, error) {
	var armed []ApplyBarrier
	for _, b := range barriers {
		if b.Armed() {
			armed = append(armed, b)
		}
	}
	if len(armed) == 0 {
		return s.Update(ents)
	}
	start := 0
	for i := range ents {
		var work []func()
		for _, b := range armed {
			if f := b.Before(ents[i].Cmd); f != nil {
				work = append(work, f)
			}
		}
		if len(work) == 0 {
			continue
		}
		if i > start {
			if _, err := s.Update(ents[start:i]); err != nil {
				return nil, err
			}
			start = i
		}
		for _, f := range work {
			f()
		}
	}
	if _, err := s.Update(ents[start:]); err != nil {
		return nil, err
	}
	return ents, nil
}
