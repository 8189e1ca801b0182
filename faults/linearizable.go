package faults

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// regState is one key's register: its value and ZooKeeper data version.
type regState struct {
	value   int64
	version int32
}

type regInput struct {
	kind   string // read, write, cas
	key    string
	value  int64
	expect int32
}

type regOutput struct {
	outcome Outcome
	value   int64 // read
	version int32 // read, or the version a write produced
}

// registerModel is one ZooKeeper znode used as a register: a set bumps the
// version; a set with a version applies only on that version; a read
// (after sync) returns the value and version. An operation whose outcome
// is unknown returns at the end of time, so porcupine may place it
// anywhere after its call, or after everything (not applied).
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return regState{} },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		st, i, o := s.(regState), in.(regInput), out.(regOutput)
		next := regState{value: i.value, version: st.version + 1}
		switch i.kind {
		case "read":
			return o.value == st.value && o.version == st.version, st
		case "write":
			if o.outcome == Unknown {
				return true, next
			}
			return o.outcome == OK && o.version == next.version, next
		case "cas":
			switch o.outcome {
			case OK:
				return st.version == i.expect && o.version == next.version, next
			case Failed:
				return st.version != i.expect, st
			default:
				if st.version == i.expect {
					return true, next
				}
				return true, st
			}
		}
		return false, st
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(regInput), out.(regOutput)
		res := map[Outcome]string{OK: "ok", Failed: "failed", Unknown: "unknown"}[o.outcome]
		switch i.kind {
		case "read":
			return fmt.Sprintf("read %s -> %d v%d", i.key, o.value, o.version)
		case "write":
			return fmt.Sprintf("set %s %d -> %s v%d", i.key, i.value, res, o.version)
		}
		return fmt.Sprintf("cas %s v%d %d -> %s v%d", i.key, i.expect, i.value, res, o.version)
	},
	DescribeState: func(s interface{}) string {
		st := s.(regState)
		return fmt.Sprintf("%d v%d", st.value, st.version)
	},
}

// checkTimeout bounds porcupine's search; a history it cannot decide in
// time is reported, not counted as a violation.
const checkTimeout = 90 * time.Second

// checkRegisters checks the register history for linearizability and, when
// it is not, writes porcupine's visualisation into dir.
func checkRegisters(ops []Op, dir string) []string {
	if len(ops) == 0 {
		return nil
	}
	base := ops[0].Call
	for _, op := range ops {
		if op.Call.Before(base) {
			base = op.Call
		}
	}
	ids := map[int]int{}
	var hist []porcupine.Operation
	for _, op := range ops {
		if _, ok := ids[op.Client]; !ok {
			ids[op.Client] = len(ids)
		}
		ret := op.Return.Sub(base).Nanoseconds()
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		hist = append(hist, porcupine.Operation{
			ClientId: ids[op.Client],
			Input:    regInput{kind: op.Kind, key: op.Key, value: op.Value, expect: op.Expect},
			Call:     op.Call.Sub(base).Nanoseconds(),
			Output:   regOutput{outcome: op.Outcome, value: op.OutValue, version: op.Version},
			Return:   ret,
		})
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, hist, checkTimeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []string{fmt.Sprintf("register: linearizability undecided within %v (%d operations)", checkTimeout, len(hist))}
	}
	msg := fmt.Sprintf("register: history of %d operations is not linearizable", len(hist))
	if dir != "" {
		if err := os.MkdirAll(dir, 0o750); err == nil {
			path := filepath.Join(dir, "register-"+strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")+".html")
			if err := porcupine.VisualizePath(registerModel, info, path); err == nil {
				msg += "; visualisation: " + path
			}
		}
	}
	return []string{msg}
}
