package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	ucli "github.com/urfave/cli/v2"

	compat "github.com/zkbridge/zkbridge/compat-tests"
)

func compatCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "compat",
		Usage:     "run the differential compatibility suite against any two ZooKeeper-protocol servers and compare their answers",
		ArgsUsage: " ",
		Description: "Every scenario of the suite (compat-tests/, 200+ of them) runs against the reference and the\n" +
			"candidate with the same client code; the transcripts — every reply's error code, data, stat\n" +
			"and ACL, every watch event in arrival order — are compared after normalising zxids to ranks,\n" +
			"session ids and times. Standalone servers or ensembles (--reference a:2181,b:2181,c:2181).\n" +
			"\n" +
			"Each scenario works under a root of its own (/AREA-NAME), removed before and after it, so\n" +
			"a server in use by others is fine. Scenarios that need a server setting are skipped, with\n" +
			"the reason, when a server lacks it: the tool probes TTL nodes, the super user, four-letter\n" +
			"words, reconfig, session timeout bounds and whether a server is fresh; the container check\n" +
			"interval (--reaper-interval) and being the servers' only client (--exclusive) it is told.\n" +
			"--list shows every scenario with what it needs.\n" +
			"\n" +
			"Without --reference it starts a ZooKeeper 3.8 with the project's scripts\n" +
			"(scripts/start-zookeeper.sh, after scripts/install-zookeeper.sh) set up like the\n" +
			"candidate is said to be (--super-digest, --reaper-interval), and stops it at exit.\n" +
			"\n" +
			"Prints a table per area (equal, documented, differs, failed, skipped), the skipped ones\n" +
			"with their reasons, and for every difference the first diverging steps of the two\n" +
			"transcripts. \"documented\" is a difference zkbridge declares on purpose (docs/compatibility.md)\n" +
			"that the candidate shows. Exit status 0 only when every scenario run is equal\n" +
			"(--accept-documented: or a documented difference); 1 otherwise.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge compat --candidate 127.0.0.1:2181\n" +
			"  zkbridge compat --reference zk1:2181 --candidate keeper1:9181 --area basic --area multi\n" +
			"  zkbridge compat --candidate 127.0.0.1:2181 --scenario 'watches/*persistent*' --json\n" +
			"  zkbridge compat --reference zk:2181 --candidate zb:2181 --super-digest super:secret \\\n" +
			"      --reaper-interval 1s --exclusive --junit compat.xml\n" +
			"  zkbridge compat --list --area 4lw",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "reference", Aliases: []string{"r"}, Usage: "the reference server(s), `HOST:PORT[,...]` (default: start a ZooKeeper 3.8 on this machine)"},
			&ucli.StringFlag{Name: "candidate", Aliases: []string{"c"}, Usage: "the server(s) compared with the reference, `HOST:PORT[,...]`"},
			&ucli.StringSliceFlag{Name: "area", Aliases: []string{"a"}, Usage: "run only scenarios of `AREA` (repeatable, or comma-separated)"},
			&ucli.StringSliceFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "run only scenarios whose AREA/NAME (or NAME) matches `GLOB` (* and ?; repeatable)"},
			&ucli.StringFlag{Name: "super-digest", Usage: "the super user both servers have, `USER:PASSWORD` (zookeeper.DigestAuthenticationProvider.superDigest's password; default: try super:superpw)"},
			&ucli.DurationFlag{Name: "reaper-interval", Usage: "the servers' container and TTL check `INTERVAL` (znode.container.checkIntervalMs; zkbridge --reaper-interval); unknown: scenarios that wait for a reap are skipped"},
			&ucli.BoolFlag{Name: "exclusive", Usage: "no client but this run uses the given servers: compare read zxids exactly (with --parallel 1) and run the scenarios that read server-wide lists (cons, stat, wchs, wchc)"},
			&ucli.IntFlag{Name: "parallel", Aliases: []string{"p"}, Value: 4, Usage: "run `N` scenarios at once"},
			&ucli.BoolFlag{Name: "json", Usage: "print the results as JSON (transcripts of the scenarios that are not equal included)"},
			&ucli.StringFlag{Name: "junit", Usage: "also write the results as JUnit XML to `FILE` (a difference is a failure)"},
			&ucli.StringFlag{Name: "transcripts", Usage: "write both transcripts of every scenario that is not equal to `DIR`"},
			&ucli.IntFlag{Name: "steps", Value: 8, Usage: "transcript steps shown per difference, from two before the first (0: all)"},
			&ucli.BoolFlag{Name: "accept-documented", Usage: "exit 0 when the only differences are the ones zkbridge documents"},
			&ucli.BoolFlag{Name: "list", Usage: "list the scenarios (after --area and --scenario) with their areas and needs, and exit"},
			&ucli.StringFlag{Name: "scripts", Usage: "`DIR` of start-zookeeper.sh for the default reference (default: ./scripts, or beside the executable)"},
		},
		Action: runCompat,
	}
}

// compatReport is what --json prints.
type compatReport struct {
	Reference compat.Target   `json:"reference"`
	Candidate compat.Target   `json:"candidate"`
	Mode      string          `json:"mode"`
	Parallel  int             `json:"parallel"`
	Seconds   float64         `json:"seconds"`
	Areas     []compat.Tally  `json:"areas"`
	Total     compat.Tally    `json:"total"`
	Results   []compat.Result `json:"results"`
}

func runCompat(c *ucli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before it?)", c.Args().First())
	}
	scenarios, err := selectScenarios(c.StringSlice("area"), c.StringSlice("scenario"))
	if err != nil {
		return err
	}
	if c.Bool("list") {
		return listScenarios(c.App.Writer, scenarios)
	}
	if c.String("candidate") == "" {
		return fmt.Errorf("--candidate HOST:PORT[,...] is required (or --list)")
	}
	if c.Int("parallel") < 1 {
		return fmt.Errorf("--parallel must be at least 1")
	}
	super := c.String("super-digest")
	if super != "" && !strings.Contains(super, ":") {
		return fmt.Errorf("--super-digest wants USER:PASSWORD (the password, not its digest), not %q", super)
	}
	if super == "" {
		super = compat.SuperCredentials
	}
	reaper := c.Duration("reaper-interval")
	if reaper < 0 {
		return fmt.Errorf("--reaper-interval must not be negative")
	}

	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	var zk *compat.ZooKeeper
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		signal.Stop(signals)
		close(signals)
	}()
	go func() {
		// The first signal lets the running scenarios end and skips the
		// rest; a second one stops the ZooKeeper this run started at once.
		if _, ok := <-signals; !ok {
			return
		}
		fmt.Fprintln(c.App.ErrWriter, "zkbridge compat: interrupted: finishing the running scenarios (again to stop now)")
		cancel()
		if _, ok := <-signals; ok {
			if zk != nil {
				zk.Stop()
			}
			os.Exit(130)
		}
	}()

	ref := &compat.Target{Name: "reference"}
	cand := &compat.Target{Name: "candidate", Addrs: splitAddrs(c.String("candidate"))}
	interval := reaper // the reference ZooKeeper's, when the run starts it
	if hosts := c.String("reference"); hosts != "" {
		ref.Addrs = splitAddrs(hosts)
	} else {
		fmt.Fprintln(c.App.ErrWriter, "zkbridge compat: starting a ZooKeeper 3.8 as the reference (scripts/start-zookeeper.sh)")
		if interval == 0 {
			interval = compat.ReapInterval
		}
		zk, err = compat.StartZooKeeperWith(compat.ZooKeeperOptions{Super: super, Reaper: interval, Scripts: c.String("scripts")})
		if err != nil {
			return fmt.Errorf("start the reference ZooKeeper (install it with scripts/install-zookeeper.sh, or give --reference): %w", err)
		}
		defer zk.Stop()
		ref.Addrs = []string{zk.Addr}
	}
	if len(ref.Addrs) == 0 || len(cand.Addrs) == 0 {
		return fmt.Errorf("--reference and --candidate need at least one HOST:PORT each")
	}
	for _, t := range []*compat.Target{ref, cand} {
		st, err := compat.ProbeReadOnly(t.Addrs)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		st.Reaper, st.Exclusive = reaper, c.Bool("exclusive")
		t.Settings = st
		if len(t.Addrs) > 1 && slices.Contains(st.Words, "srvr") {
			// Followers first, the leader last, on both sides alike: a
			// scenario's first connection and four-letter words then
			// meet the same role (srvr, stat and mntr differ by role).
			if t.Addrs, err = compat.LeaderLast(t.Addrs, 30*time.Second); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
	}
	if zk != nil {
		ref.Settings.Reaper, ref.Settings.Exclusive = interval, true
	}
	for _, t := range []*compat.Target{ref, cand} {
		if len(t.Addrs) > 1 {
			stop, err := compat.StartWakers(t.Addrs)
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			defer func() { _ = stop() }()
		}
	}

	opts := compat.Options{Parallel: c.Int("parallel")}
	asJSON := c.Bool("json")
	bar := newCompatBar(c.App.ErrWriter, len(scenarios))
	opts.Done = func(r compat.Result) {
		if bar != nil {
			// A fixed width keeps the bar in place.
			id := []rune(r.ID)
			if len(id) > 40 {
				id = append(id[:39], '…')
			}
			bar.Describe(fmt.Sprintf("%-40s", string(id)))
			_ = bar.Add(1)
		}
	}
	started := time.Now()
	// Scenarios that need fresh servers run before the probes that
	// create nodes; the rest after them.
	var fresh, rest []*compat.Scenario
	for _, sc := range scenarios {
		if sc.Needs&compat.NeedFresh != 0 {
			fresh = append(fresh, sc)
		} else {
			rest = append(rest, sc)
		}
	}
	results := compat.Compare(ctx, fresh, ref, cand, opts)
	for _, t := range []*compat.Target{ref, cand} {
		if err := compat.ProbeWrites(t.Addrs, &t.Settings, super); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	results = append(results, compat.Compare(ctx, rest, ref, cand, opts)...)
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(c.App.ErrWriter)
	}
	elapsed := time.Since(started)
	mode := "exact"
	if compat.ModeFor(opts, ref, cand).Tolerant {
		mode = "tolerant"
	}

	if dir := c.String("transcripts"); dir != "" {
		if err := writeTranscripts(dir, results, ref.Name, cand.Name); err != nil {
			return err
		}
	}
	if path := c.String("junit"); path != "" {
		if err := writeJUnitFile(path, results, ref.Name, cand.Name, !c.Bool("accept-documented")); err != nil {
			return err
		}
	}
	if asJSON {
		areas, total := compat.Tallies(results)
		if err := writeJSON(c, compatReport{Reference: *ref, Candidate: *cand, Mode: mode, Parallel: opts.Parallel,
			Seconds: elapsed.Seconds(), Areas: areas, Total: total, Results: results}); err != nil {
			return err
		}
	} else {
		w := c.App.Writer
		describeTarget(w, ref)
		describeTarget(w, cand)
		fmt.Fprintf(w, "%d scenarios in %.0f s, %d at once, %s read zxids\n\n", len(results), elapsed.Seconds(), opts.Parallel, mode)
		compat.WriteTable(w, results)
		compat.WriteSkips(w, results)
		compat.WriteDifferences(w, results, ref.Name, cand.Name, c.Int("steps"))
	}
	return compatVerdict(results, c.Bool("accept-documented"), ctx.Err() != nil)
}

// compatVerdict is nil (exit 0) when every scenario run came out equal
// (or documented, when accepted).
func compatVerdict(results []compat.Result, acceptDocumented, interrupted bool) error {
	_, total := compat.Tallies(results)
	bad := total.Differs + total.Failed
	if !acceptDocumented {
		bad += total.Documented
	}
	switch {
	case interrupted:
		return fmt.Errorf("interrupted: %d of %d scenarios run, %d not equal", total.Scenarios-total.Skipped, total.Scenarios, bad)
	case bad > 0:
		return fmt.Errorf("%d of %d scenarios are not equal (%d differ, %d documented differences, %d failed)",
			bad, total.Scenarios, total.Differs, total.Documented, total.Failed)
	}
	return nil
}

// selectScenarios keeps the scenarios of the given areas whose id or name
// matches one of the globs (no area, no glob: all).
func selectScenarios(areas, globs []string) ([]*compat.Scenario, error) {
	all := compat.Scenarios()
	known := map[string]bool{}
	for _, sc := range all {
		known[sc.Area] = true
	}
	want := map[string]bool{}
	for _, a := range areas {
		for _, a := range strings.Split(a, ",") {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			if !known[a] {
				names := make([]string, 0, len(known))
				for k := range known {
					names = append(names, k)
				}
				slices.Sort(names)
				return nil, fmt.Errorf("no area %q (areas: %s)", a, strings.Join(names, ", "))
			}
			want[a] = true
		}
	}
	var res []*regexp.Regexp
	for _, g := range globs {
		res = append(res, globRe(g))
	}
	var out []*compat.Scenario
	for _, sc := range all {
		if len(want) > 0 && !want[sc.Area] {
			continue
		}
		if len(res) > 0 && !slices.ContainsFunc(res, func(re *regexp.Regexp) bool {
			return re.MatchString(sc.ID()) || re.MatchString(sc.Name)
		}) {
			continue
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario matches --area %v --scenario %v (see --list)", areas, globs)
	}
	return out, nil
}

// globRe turns a glob (* any run of characters, ? one) into an anchored
// regular expression.
func globRe(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range g {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func listScenarios(w io.Writer, scenarios []*compat.Scenario) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AREA\tSCENARIO\tNEEDS\tNOTES")
	for _, sc := range scenarios {
		var notes []string
		if len(sc.Words) > 0 {
			notes = append(notes, "words: "+strings.Join(sc.Words, " "))
		}
		if sc.Serial {
			notes = append(notes, "runs alone")
		}
		if sc.StandaloneOnly != "" {
			notes = append(notes, "standalone only")
		}
		if sc.Isolated != "" {
			notes = append(notes, "servers of its own (go test only)")
		}
		if sc.Differs != "" {
			notes = append(notes, "documented zkbridge difference")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sc.Area, sc.Name, sc.Needs, strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d scenarios\n", len(scenarios))
	return err
}

func describeTarget(w io.Writer, t *compat.Target) {
	st := t.Settings
	version := st.Version
	if version == "" {
		version = "version unknown (srvr not whitelisted)"
	}
	fmt.Fprintf(w, "%-9s  %s  %s\n", t.Name, strings.Join(t.Addrs, ","), version)
	super := "no super user"
	if st.Super != "" {
		user, _, _ := strings.Cut(st.Super, ":")
		super = "super user " + user
	}
	reaper := "reaper interval unknown"
	if st.Reaper > 0 {
		reaper = "reaper every " + st.Reaper.String()
	}
	flag := func(on bool, yes, no string) string {
		if on {
			return yes
		}
		return no
	}
	fmt.Fprintf(w, "           %s, %s, %s, %s, sessions %d-%d ms, %d four-letter words, %s, %s\n",
		flag(st.TTL, "TTL", "no TTL"), super, reaper, flag(st.Reconfig, "reconfig enabled", "reconfig disabled"),
		st.MinTimeout, st.MaxTimeout, len(st.Words), flag(st.Fresh, "fresh", "not fresh"), flag(st.Exclusive, "exclusive", "shared"))
}

func writeTranscripts(dir string, results []compat.Result, refName, candName string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unsafe := regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)
	for _, r := range results {
		if r.Status == compat.Equal || r.Status == compat.Skipped {
			continue
		}
		base := filepath.Join(dir, unsafe.ReplaceAllString(r.ID, "_"))
		for name, lines := range map[string][]string{refName: r.Reference, candName: r.Candidate} {
			if err := os.WriteFile(base+"."+name+".txt", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeJUnitFile(path string, results []compat.Result, refName, candName string, documentedFails bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := compat.WriteJUnit(f, results, refName, candName, documentedFails); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newCompatBar is a progress bar on w when w is a terminal (nil otherwise).
func newCompatBar(w io.Writer, n int) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return nil
	}
	return progressbar.NewOptions(n,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription("compat"),
	)
}
