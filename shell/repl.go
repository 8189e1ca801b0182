package shell

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chzyer/readline"

	"github.com/zkbridge/zkbridge/shell/zkclient"
)

// DefaultHistoryFile is where the interactive history is kept:
// $ZKBRIDGE_HISTORY, else ~/.zkbridge_history ("" when neither is known).
func DefaultHistoryFile() string {
	if f := os.Getenv("ZKBRIDGE_HISTORY"); f != "" {
		return f
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".zkbridge_history")
}

func isTerminal(f *os.File) bool { return readline.IsTerminal(int(f.Fd())) }

// interactive is the prompt loop on a terminal: line editing, persisted
// history, completion of commands and znode paths.
func (s *Shell) interactive() int {
	rl, err := readline.NewEx(&readline.Config{
		Prompt:            s.prompt(),
		HistoryFile:       s.opts.HistoryFile,
		AutoComplete:      &completer{s: s},
		InterruptPrompt:   "^C",
		EOFPrompt:         "",
		HistorySearchFold: true,
	})
	if err != nil {
		s.stderr("line editing unavailable (%v); reading plain lines\n", err)
		return s.plainLoop()
	}
	defer rl.Close()
	// Watch events arrive while the prompt is shown: write through
	// readline so it redraws the prompt under them.
	s.mu.Lock()
	s.out = rl.Stdout()
	s.err = rl.Stderr()
	s.mu.Unlock()
	for {
		rl.SetPrompt(s.prompt())
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			if line == "" {
				return s.exitCode // Ctrl-C on an empty line leaves, as zkCli does
			}
			continue
		}
		if err != nil { // io.EOF (Ctrl-D)
			return s.exitCode
		}
		if s.executeLine(line) {
			return s.exitCode
		}
	}
}

func (s *Shell) plainLoop() int {
	buf := make([]byte, 0, 4096)
	one := make([]byte, 1)
	for {
		n, err := s.in.Read(one)
		if n == 1 && one[0] != '\n' {
			buf = append(buf, one[0])
			continue
		}
		if n == 1 || (err != nil && len(buf) > 0) {
			if s.executeLine(strings.TrimRight(string(buf), "\r")) {
				return s.exitCode
			}
			buf = buf[:0]
		}
		if err != nil {
			if err != io.EOF {
				s.stderr("%v\n", err)
			}
			return s.exitCode
		}
	}
}

// completer completes the command (first word) and znode paths (words
// starting with "/") from the server.
type completer struct{ s *Shell }

func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	head := string(line[:pos])
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	if strings.TrimSpace(head[:start]) == "" {
		var out [][]rune
		for name := range commandTable {
			if strings.HasPrefix(name, word) {
				out = append(out, []rune(name[len(word):]+" "))
			}
		}
		slices.SortFunc(out, func(a, b []rune) int { return strings.Compare(string(a), string(b)) })
		return out, len([]rune(word))
	}
	if !strings.HasPrefix(word, "/") {
		return nil, 0
	}
	zk := c.s.zk
	if zk == nil || (zk.State() != zkclient.StateConnected && zk.State() != zkclient.StateConnectedReadOnly) {
		return nil, 0
	}
	dir, prefix := word[:strings.LastIndexByte(word, '/')], word[strings.LastIndexByte(word, '/')+1:]
	if dir == "" {
		dir = "/"
	}
	children, _, err := zk.Children(dir, false)
	if err != nil {
		return nil, 0
	}
	slices.Sort(children)
	var out [][]rune
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			out = append(out, []rune(ch[len(prefix):]))
		}
	}
	return out, len([]rune(prefix))
}
