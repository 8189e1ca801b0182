package compattests

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Need is a server setting, or a condition of the run, a scenario depends
// on. A scenario declares its needs (Scenario.Needs); a run knows which
// each server meets (Settings, probed or told) and skips, with the
// reason, a scenario whose needs a server does not meet: it is never
// counted as a difference.
type Need uint

const (
	// NeedSuper: a super user whose password the run knows
	// (zookeeper.DigestAuthenticationProvider.superDigest; zkbridge
	// --super-digest).
	NeedSuper Need = 1 << iota
	// NeedTTL: TTL nodes (zookeeper.extendedTypesEnabled=true; zkbridge
	// has them always).
	NeedTTL
	// NeedReaper: a known container and TTL check interval
	// (znode.container.checkIntervalMs; zkbridge --reaper-interval): the
	// scenario waits for a reap, or for its absence, a few intervals long.
	NeedReaper
	// Need4lw: the four-letter words of Scenario.Words are whitelisted
	// (4lw.commands.whitelist; zkbridge --4lw).
	Need4lw
	// NeedReconfig: reconfig is enabled (reconfigEnabled=true).
	NeedReconfig
	// NeedNoReconfig: reconfig is disabled (ZooKeeper's default).
	NeedNoReconfig
	// NeedFresh: nothing was written to the servers before the run (the
	// root holds only /zookeeper, untouched): the scenario reads the
	// root's or /zookeeper's stat. Such scenarios run first.
	NeedFresh
	// NeedExclusive: no client but the suite's uses the servers during
	// the run: the scenario reads server-wide lists (connections,
	// watches) that other clients would add to.
	NeedExclusive
	// NeedTimeouts: both servers negotiate session timeouts within the
	// same bounds (tickTime, min/maxSessionTimeout): the scenario asks
	// for timeouts at or beyond them.
	NeedTimeouts
	// NeedLoopback: the servers see the suite's client as 127.0.0.1 (they
	// run on this machine): the scenario's ip ACLs name that address.
	NeedLoopback
)

// needNames are the needs as --list and the reports name them, in order.
var needNames = []struct {
	n    Need
	name string
	what string // what a server must have, for a skip reason
}{
	{NeedSuper, "super", "a super user (--super-digest user:password)"},
	{NeedTTL, "ttl", "TTL nodes (zookeeper.extendedTypesEnabled=true)"},
	{NeedReaper, "reaper", "a known container check interval (--reaper-interval)"},
	{Need4lw, "4lw", "four-letter words"},
	{NeedReconfig, "reconfig", "reconfig enabled (reconfigEnabled=true)"},
	{NeedNoReconfig, "no-reconfig", "reconfig disabled"},
	{NeedFresh, "fresh", "a fresh server (nothing written to it before the run)"},
	{NeedExclusive, "exclusive", "servers no other client uses during the run (--exclusive)"},
	{NeedTimeouts, "timeouts", "the same session timeout bounds on both servers"},
	{NeedLoopback, "loopback", "servers on this machine (the client seen as 127.0.0.1)"},
}

// Names lists the needs in n by name ("super", "ttl", …).
func (n Need) Names() []string {
	var out []string
	for _, x := range needNames {
		if n&x.n != 0 {
			out = append(out, x.name)
		}
	}
	return out
}

func (n Need) String() string {
	if n == 0 {
		return "-"
	}
	return strings.Join(n.Names(), ",")
}

// Settings are what one server (standalone or ensemble) offers the
// scenarios, probed (Probe) or known because the run started it.
type Settings struct {
	// Super is the super user's "user:password" the server accepts ("":
	// none known).
	Super string `json:"super,omitempty"`
	// TTL: createTTL works.
	TTL bool `json:"ttl"`
	// Reaper is the container/TTL check interval (0: unknown).
	Reaper time.Duration `json:"reaperInterval,omitempty"`
	// Words are the whitelisted four-letter words.
	Words []string `json:"fourLetterWords,omitempty"`
	// Reconfig: reconfig is enabled.
	Reconfig bool `json:"reconfig"`
	// Fresh: nothing had been written to the server when the run began.
	Fresh bool `json:"fresh"`
	// Exclusive: no other client uses the server during the run.
	Exclusive bool `json:"exclusive"`
	// MinTimeout and MaxTimeout are the session timeouts (ms) the server
	// grants for a request of 1 ms and of 10^9 ms (0: unknown).
	MinTimeout int32 `json:"minSessionTimeout,omitempty"`
	MaxTimeout int32 `json:"maxSessionTimeout,omitempty"`
	// Loopback: the server is reached on 127.0.0.1 (it sees the client
	// as that address).
	Loopback bool `json:"loopback"`
	// Dedicated: the run started the server for this one scenario, which
	// may change it for good (Scenario.Isolated).
	Dedicated bool `json:"-"`
	// Version is the first line of srvr ("" when srvr is not whitelisted).
	Version string `json:"version,omitempty"`
}

// AllWords are the four-letter words the scenarios use.
var AllWords = []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "isro", "mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs"}

// SuiteSettings are the settings of the servers the go tests start (both
// ZooKeeper and zkbridge, see targets.go): every need met except
// reconfig, which TestCompatReconfig's clusters have.
func SuiteSettings() Settings {
	return Settings{Super: SuperCredentials, TTL: true, Reaper: ReapInterval, Words: AllWords,
		Fresh: true, Exclusive: true, Loopback: true, MinTimeout: 4000, MaxTimeout: 40000}
}

func (st *Settings) hasWord(w string) bool { return slices.Contains(st.Words, w) }

// unmet is why one server does not meet need n of sc ("" when it does).
func (st *Settings) unmet(n Need, sc *Scenario) string {
	switch n {
	case NeedSuper:
		if st.Super == "" {
			return "no super user known"
		}
	case NeedTTL:
		if !st.TTL {
			return "createTTL refused"
		}
	case NeedReaper:
		if st.Reaper <= 0 {
			return "check interval unknown"
		}
	case Need4lw:
		var missing []string
		for _, w := range sc.Words {
			if !st.hasWord(w) {
				missing = append(missing, w)
			}
		}
		if len(missing) > 0 {
			return "not whitelisted: " + strings.Join(missing, " ")
		}
	case NeedReconfig:
		if !st.Reconfig {
			return "reconfig disabled"
		}
	case NeedNoReconfig:
		if st.Reconfig {
			return "reconfig enabled"
		}
	case NeedFresh:
		if !st.Fresh {
			return "not fresh"
		}
	case NeedExclusive:
		if !st.Exclusive {
			return "not known to be exclusive"
		}
	case NeedLoopback:
		if !st.Loopback {
			return "not on 127.0.0.1"
		}
	}
	return ""
}

// unsafeOn reports whether sc may break t: an ensemble not known to be
// zkbridge's (by srvr's version).
func (sc *Scenario) unsafeOn(t *Target) bool {
	return sc.Unsafe != "" && len(t.Addrs) > 1 && !strings.Contains(t.Settings.Version, "zkbridge")
}

// Unmet says why sc cannot run against ref and cand ("" when it can): a
// need one of them does not meet, a cluster for a standalone-only
// scenario, or a scenario that needs servers of its own.
func (sc *Scenario) Unmet(ref, cand *Target) string { return sc.unmet(ref, cand, ref, cand) }

// unmet is Unmet with the targets the scenario will run against (the
// candidate alone, for a declared difference in some go tests): only their
// safety counts.
func (sc *Scenario) unmet(ref, cand *Target, run ...*Target) string {
	if sc.Isolated != "" && !(ref.Settings.Dedicated && cand.Settings.Dedicated) {
		return "needs servers of its own: " + sc.Isolated
	}
	if sc.StandaloneOnly != "" && (len(ref.Addrs) > 1 || len(cand.Addrs) > 1) {
		return "standalone only: " + sc.StandaloneOnly
	}
	for _, t := range run {
		if sc.unsafeOn(t) {
			return "unsafe on a ZooKeeper ensemble: " + sc.Unsafe
		}
	}
	for _, x := range needNames {
		if sc.Needs&x.n == 0 {
			continue
		}
		if x.n == NeedTimeouts {
			a, b := ref.Settings, cand.Settings
			if a.MinTimeout == 0 || a.MinTimeout != b.MinTimeout || a.MaxTimeout != b.MaxTimeout {
				return fmt.Sprintf("needs %s (%s %d-%d ms, %s %d-%d ms)", x.what,
					ref.Name, a.MinTimeout, a.MaxTimeout, cand.Name, b.MinTimeout, b.MaxTimeout)
			}
			continue
		}
		var why []string
		for _, t := range []*Target{ref, cand} {
			if u := t.Settings.unmet(x.n, sc); u != "" {
				why = append(why, t.Name+": "+u)
			}
		}
		if len(why) > 0 {
			return fmt.Sprintf("needs %s (%s)", x.what, strings.Join(why, "; "))
		}
	}
	if sc.Needs&NeedSuper != 0 && ref.Settings.Super != cand.Settings.Super {
		return fmt.Sprintf("needs %s: the two servers' super users differ", needNames[0].what)
	}
	return ""
}
