package shell

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// argsPattern and quotedPattern are zkCli's (ZooKeeperMain.MyCommandOptions):
// a word, or a "double" or 'single' quoted string whose quotes are dropped.
var (
	argsPattern = regexp.MustCompile(`\s*([^"']\S*|"[^"]*"|'[^']*')\s*`)
)

// splitLine breaks a command line into words as zkCli does.
func splitLine(line string) []string {
	var out []string
	for _, m := range argsPattern.FindAllStringSubmatch(line, -1) {
		v := m[1]
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, v)
	}
	return out
}

// optSpec declares one option of a command: its name without "-" and
// whether it takes a value.
type optSpec struct {
	name   string
	hasArg bool
}

// parsed is a command line after option parsing: args[0] is the command.
type parsed struct {
	args []string
	opts map[string]string // option name -> value ("" for flags)
}

func (p *parsed) has(name string) bool { _, ok := p.opts[name]; return ok }

// parseError is what commons-cli's DefaultParser throws, printed the way
// zkCli prints it (the exception's toString).
type parseError struct{ class, msg string }

func (e *parseError) Error() string { return "org.apache.commons.cli." + e.class + ": " + e.msg }

// parseOptions parses words as Apache commons-cli's DefaultParser does for
// zkCli's commands: options may come anywhere, "-v5" and "-v 5" both set
// v, flags may be grouped ("-se"), a negative number is an argument, "--"
// ends options, an unknown option is an error.
func parseOptions(words []string, specs []optSpec) (*parsed, error) {
	byName := map[string]optSpec{}
	for _, s := range specs {
		byName[s.name] = s
	}
	p := &parsed{opts: map[string]string{}}
	isNumber := func(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }
	isOption := func(w string) bool {
		if !strings.HasPrefix(w, "-") || w == "-" || isNumber(w) {
			return false
		}
		name := strings.TrimLeft(w, "-")
		if _, ok := byName[name]; ok {
			return true
		}
		if len(name) > 0 {
			if _, ok := byName[name[:1]]; ok {
				return true
			}
		}
		return strings.HasPrefix(w, "-")
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			p.args = append(p.args, words[i+1:]...)
			break
		}
		if !isOption(w) || i == 0 {
			p.args = append(p.args, w)
			continue
		}
		name := strings.TrimLeft(w, "-")
		if s, ok := byName[name]; ok {
			if s.hasArg {
				if i+1 >= len(words) || isOption(words[i+1]) {
					return nil, &parseError{"MissingArgumentException", "Missing argument for option: " + name}
				}
				i++
				p.opts[name] = words[i]
			} else {
				p.opts[name] = ""
			}
			continue
		}
		// "-v5": an option with its value attached.
		if s, ok := byName[name[:1]]; ok && s.hasArg {
			p.opts[s.name] = name[1:]
			continue
		}
		// "-se", "-sv 1", "-sv1": grouped flags, the last one may take a
		// value (the rest of the word, else the next word).
		if grouped, ok := parseGroup(name, byName); ok {
			for _, g := range grouped {
				if g.needsNext {
					if i+1 >= len(words) {
						return nil, &parseError{"MissingArgumentException", "Missing argument for option: " + g.name}
					}
					i++
					g.value = words[i]
				}
				p.opts[g.name] = g.value
			}
			continue
		}
		return nil, &parseError{"UnrecognizedOptionException", "Unrecognized option: " + w}
	}
	return p, nil
}

// cliError is a failed command: its message goes to stderr and its exit
// code becomes zkCli's exit code.
type cliError struct {
	msg  string
	code int
}

func (e *cliError) Error() string { return e.msg }

func errorf(format string, a ...any) *cliError {
	return &cliError{msg: fmt.Sprintf(format, a...), code: 1}
}

type groupedOpt struct {
	name, value string
	needsNext   bool
}

// parseGroup splits "sv1" into s and v=1 when every letter up to the
// first option with a value is a known option.
func parseGroup(name string, byName map[string]optSpec) ([]groupedOpt, bool) {
	if len(name) < 2 {
		return nil, false
	}
	var out []groupedOpt
	for i, r := range name {
		s, ok := byName[string(r)]
		if !ok {
			return nil, false
		}
		if s.hasArg {
			rest := name[i+1:]
			return append(out, groupedOpt{name: s.name, value: rest, needsNext: rest == ""}), true
		}
		out = append(out, groupedOpt{name: s.name})
	}
	return out, true
}
