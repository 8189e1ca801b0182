package shell

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Exit codes, as zkCli's.
const (
	exitOK       = 0
	exitFailed   = 1
	exitNotFound = 127
	// exitInvocation is ExitCode.INVALID_INVOCATION (bad -server, unreadable -client-configuration).
	exitInvocation = 2
)

// Options are zkCli's command-line options.
type Options struct {
	Server            string // "host:port[,…][/chroot]"
	Timeout           time.Duration
	ReadOnly          bool
	WaitForConnection bool
	ClientConfig      string // -client-configuration properties file
	// HistoryFile persists the interactive history ("" disables it).
	HistoryFile string
}

// Shell is one zkCli-compatible session: a client, the command history
// and the printwatches setting.
type Shell struct {
	opts Options
	in   io.Reader
	out  io.Writer // stdout (guarded by mu: watch events arrive concurrently)
	err  io.Writer
	mu   sync.Mutex

	zk           *zkclient.Client
	host         string
	history      map[int]string
	commandCount int
	printWatches bool
	exitCode     int
	dial         dialFunc
	sasl         *zkclient.SASLCredentials
	// onEvent, when set, receives every event too (the watch command).
	onEvent func(zkclient.Event)
	// quiet drops zkCli's greeting and connection-state events, so a
	// one-shot --json command prints JSON alone.
	quiet bool
}

// New returns a shell reading commands from in and writing to out and errOut.
func New(opts Options, in io.Reader, out, errOut io.Writer) *Shell {
	if opts.Server == "" {
		opts.Server = "localhost:2181"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	return &Shell{opts: opts, in: in, out: out, err: errOut, history: map[int]string{}, printWatches: true}
}

// ParseArgs reads zkCli's invocation: options, then an optional command
// and its arguments. Like zkCli, options may repeat; the first word that
// is not an option starts the command.
func ParseArgs(args []string) (Options, []string, error) {
	o := Options{Server: "localhost:2181", Timeout: 30 * time.Second}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("Error: no argument found for option %s", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch a {
		case "-server", "--server":
			o.Server, err = value()
		case "-timeout", "--timeout":
			var v string
			if v, err = value(); err == nil {
				ms, perr := strconv.Atoi(v)
				if perr != nil || ms <= 0 {
					return o, nil, fmt.Errorf("-timeout %q: want a positive number of milliseconds", v)
				}
				o.Timeout = time.Duration(ms) * time.Millisecond
			}
		case "-r", "--r":
			o.ReadOnly = true
		case "-waitforconnection", "--waitforconnection":
			o.WaitForConnection = true
		case "-client-configuration", "--client-configuration":
			o.ClientConfig, err = value()
		default:
			if !strings.HasPrefix(a, "-") {
				return o, args[i:], nil
			}
			// zkCli ignores options it does not know.
		}
		if err != nil {
			return o, nil, err
		}
	}
	return o, nil, nil
}

// Run runs cmd (zkCli's non-interactive mode) or, when cmd is empty, the
// interactive loop, and returns zkCli's exit code.
func (s *Shell) Run(cmd []string) int {
	cc, err := loadClientConfig(s.opts.ClientConfig)
	if err != nil {
		fmt.Fprintln(s.err, err)
		return exitInvocation
	}
	s.dial, s.sasl = cc.dial, cc.sasl
	s.quiet = len(cmd) > 0 && slices.Contains(cmd, "--json")
	if !s.quiet {
		s.println("Connecting to " + s.opts.Server)
	}
	if err := s.connect(s.opts.Server); err != nil {
		fmt.Fprintln(s.err, err)
		return exitInvocation
	}
	defer func() {
		if s.zk != nil && s.zk.State().Alive() {
			s.closeQuietly()
		}
	}()
	if len(cmd) > 0 {
		s.processCmd(cmd)
		return s.exitCode
	}
	s.println("Welcome to ZooKeeper!")
	if f, ok := s.in.(*os.File); ok && isTerminal(f) {
		return s.interactive()
	}
	// Not a terminal: read lines without prompts, as zkCli without JLine.
	sc := bufio.NewScanner(s.in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if s.executeLine(sc.Text()) {
			return s.exitCode
		}
	}
	return s.exitCode
}

// closeQuietly ends the session without printing its Closed event (zkCli's
// non-interactive mode exits without closing).
func (s *Shell) closeQuietly() {
	s.mu.Lock()
	s.printWatches = false
	s.mu.Unlock()
	_ = s.zk.Close()
}

func (s *Shell) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(s.out, line)
}

// stdout writes command output under the output lock.
func (s *Shell) stdout(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, a...)
}

func (s *Shell) stderr(format string, a ...any) {
	fmt.Fprintf(s.err, format, a...)
}

// event prints a watch notification as zkCli's MyWatcher.
func (s *Shell) event(ev zkclient.Event) {
	s.mu.Lock()
	if s.printWatches && !(s.quiet && ev.Type == zkproto.EventNone) {
		fmt.Fprintf(s.out, "\nWATCHER::\n\n%s\n", ev)
	}
	hook := s.onEvent
	s.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
}

// connect (re)connects to host, closing the current session first.
func (s *Shell) connect(host string) error {
	if s.zk != nil && s.zk.State().Alive() {
		_ = s.zk.Close()
	}
	s.host = host
	servers, chroot, err := zkclient.ParseConnectString(host)
	if err != nil {
		return err
	}
	opts := zkclient.Options{Servers: servers, Chroot: chroot, SessionTimeout: s.opts.Timeout, ReadOnly: s.opts.ReadOnly,
		Watcher: s.event}
	if s.dial != nil {
		opts.Dial = s.dial
	}
	opts.SASL = s.sasl
	zk, err := zkclient.New(opts)
	if err != nil {
		return err
	}
	s.zk = zk
	if s.opts.WaitForConnection {
		if err := zk.Wait(s.opts.Timeout); err != nil {
			_ = zk.Close()
			return errors.New("org.apache.zookeeper.KeeperException$ConnectionLossException: KeeperErrorCode = ConnectionLoss")
		}
	}
	return nil
}

// prompt is zkCli's: "[zk: host:port(CONNECTED) 3] ".
func (s *Shell) prompt() string {
	return fmt.Sprintf("[zk: %s(%s) %d] ", s.host, s.zk.State(), s.commandCount)
}

// executeLine runs one line of the interactive loop; true means quit.
func (s *Shell) executeLine(line string) bool {
	if line == "" {
		return false
	}
	words := splitLine(line)
	s.history[s.commandCount] = line
	quit := false
	if len(words) > 0 {
		quit = s.processCmd(words)
	}
	s.commandCount++
	return quit
}

// processCmd runs a command, prints its failure on stderr and records
// the exit code; true means quit.
func (s *Shell) processCmd(words []string) bool {
	quit, err := s.processZKCmd(words)
	s.exitCode = exitOK
	if err != nil {
		var ce *cliError
		if errors.As(err, &ce) {
			s.exitCode = ce.code
		} else {
			s.exitCode = exitFailed
		}
		s.stderr("%s\n", err.Error())
	}
	return quit
}

// usage prints zkCli's usage (on stderr).
func (s *Shell) usage() {
	s.stderr("ZooKeeper -server host:port -client-configuration properties-file cmd args\n")
	for _, name := range sortedCommands() {
		s.stderr("\t%s %s\n", name, commandTable[name].usage)
	}
}

func sortedCommands() []string {
	var names []string
	for n, c := range commandTable {
		if !c.extra {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func (s *Shell) processZKCmd(words []string) (bool, error) {
	if len(words) < 1 {
		s.usage()
		return false, errorf("No command entered")
	}
	cmd := words[0]
	c, ok := commandTable[cmd]
	if !ok {
		s.usage()
		return false, &cliError{msg: "Command not found: Command not found " + cmd, code: exitNotFound}
	}
	switch cmd {
	case "quit":
		_ = s.zk.Close()
		return true, nil
	case "redo":
		if len(words) >= 2 {
			i, err := strconv.ParseInt(words[1], 0, 32)
			if err != nil {
				return false, errorf("For input string: \"%s\"", words[1])
			}
			if int64(s.commandCount) <= i || i < 0 {
				return false, errorf("Command index out of range")
			}
			line := s.history[int(i)]
			again := splitLine(line)
			if len(again) > 0 && again[0] == "redo" {
				return false, errorf("No redoing redos")
			}
			s.history[s.commandCount] = line
			if s.processCmd(again) {
				return true, nil
			}
		}
	case "history":
		for i := s.commandCount - 10; i <= s.commandCount; i++ {
			if i >= 0 {
				s.stdout("%d - %s\n", i, s.history[i])
			}
		}
	case "printwatches":
		s.mu.Lock()
		if len(words) == 1 {
			state := "off"
			if s.printWatches {
				state = "on"
			}
			fmt.Fprintf(s.out, "printwatches is %s\n", state)
		} else {
			s.printWatches = words[1] == "on"
		}
		s.mu.Unlock()
	case "connect":
		host := s.host
		if len(words) >= 2 {
			host = words[1]
		}
		if err := s.connect(host); err != nil {
			return false, errorf("%v", err)
		}
	}
	if s.zk == nil || !s.zk.State().Alive() {
		s.println("Not connected")
		return false, nil
	}
	if c.run == nil {
		return false, nil
	}
	return false, c.run(s, words)
}

// wrap turns a client error into zkCli's message (CliWrapperException).
func wrap(err error) error {
	if err == nil {
		return nil
	}
	if zkclient.IsPathError(err) {
		return errorf("%s", err.Error())
	}
	var ke *zkclient.Error
	if !errors.As(err, &ke) {
		if errors.Is(err, zkclient.ErrClosed) {
			return errorf("KeeperErrorCode = Session expired")
		}
		return errorf("%v", err)
	}
	p := ke.Path
	if ke.NullPath {
		p = "null"
	}
	switch ke.Code {
	case zkproto.ErrNoNode:
		return errorf("Node does not exist: %s", p)
	case zkproto.ErrNoChildrenForEphemerals:
		return errorf("Ephemerals cannot have children: %s", p)
	case zkproto.ErrNodeExists:
		return errorf("Node already exists: %s", p)
	case zkproto.ErrNotEmpty:
		return errorf("Node not empty: %s", p)
	case zkproto.ErrNotReadOnly:
		return errorf("Not a read-only call: %s", p)
	case zkproto.ErrInvalidACL:
		return errorf("Acl is not valid : %s", p)
	case zkproto.ErrNoAuth:
		return errorf("Insufficient permission : %s", p)
	case zkproto.ErrBadArguments:
		return errorf("Arguments are not valid : %s", p)
	case zkproto.ErrBadVersion:
		return errorf("version No is not valid : %s", p)
	case zkproto.ErrReconfigInProgress:
		return errorf("Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)")
	case zkproto.ErrNewConfigNoQuorum:
		return errorf("No quorum of new config is connected and up-to-date with the leader of last commmitted config - try invoking reconfiguration after new servers are connected and synced")
	case zkproto.ErrQuotaExceeded:
		return errorf("Quota has exceeded : %s", p)
	}
	return errorf("%s", ke.Error())
}

// printJSON writes v as one line of JSON.
func (s *Shell) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.stdout("%s\n", b)
	return nil
}
