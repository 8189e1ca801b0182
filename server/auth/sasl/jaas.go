package sasl

import (
	"fmt"
	"os"
	"strings"
	"unicode"
)

// JAAS is a parsed JAAS login configuration file: login contexts (sections)
// by name, each a list of login modules.
type JAAS struct {
	Sections map[string][]LoginModule
}

// LoginModule is one entry of a JAAS section:
// `class flag key="value" …;`.
type LoginModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// DigestLoginModule is the module ZooKeeper's DIGEST-MD5 users are listed under.
const DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// DefaultServerSection is the login context ZooKeeper reads
// (zookeeper.sasl.serverconfig changes it).
const DefaultServerSection = "Server"

// userPrefix marks a DIGEST-MD5 user among a module's options.
const userPrefix = "user_"

// LoadJAAS reads and parses a JAAS file.
func LoadJAAS(path string) (*JAAS, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jaas: %w", err)
	}
	j, err := ParseJAAS(string(raw))
	if err != nil {
		return nil, fmt.Errorf("jaas %s: %w", path, err)
	}
	return j, nil
}

// Users returns the DIGEST-MD5 users of a section: every option named
// user_<name> of any of its modules, as ZooKeeper's
// SaslServerCallbackHandler collects them. A missing section is an error
// (ZooKeeper refuses to start).
func (j *JAAS) Users(section string) (map[string]string, error) {
	mods, ok := j.Sections[section]
	if !ok {
		return nil, fmt.Errorf("jaas: no %q section (ZooKeeper: server cannot start); sections present: %s", section, j.sectionNames())
	}
	users := map[string]string{}
	for _, m := range mods {
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, userPrefix); ok {
				users[name] = v
			}
		}
	}
	return users, nil
}

func (j *JAAS) sectionNames() string {
	var names []string
	for n := range j.Sections {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ParseJAAS parses the JAAS configuration syntax as the JDK's ConfigFile
// does: `Name { class flag opt=value … ; … };`, values quoted or bare,
// comments with #, // and /* */.
func ParseJAAS(text string) (*JAAS, error) {
	toks, err := jaasTokens(text)
	if err != nil {
		return nil, err
	}
	p := &jaasParser{toks: toks}
	j := &JAAS{Sections: map[string][]LoginModule{}}
	for !p.done() {
		name, err := p.word("login context name")
		if err != nil {
			return nil, err
		}
		if err := p.expect("{"); err != nil {
			return nil, err
		}
		var mods []LoginModule
		for !p.peekIs("}") {
			m, err := p.module()
			if err != nil {
				return nil, fmt.Errorf("section %s: %w", name, err)
			}
			mods = append(mods, m)
		}
		p.next() // }
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		if _, dup := j.Sections[name]; dup {
			// The JDK appends a repeated section's modules.
			j.Sections[name] = append(j.Sections[name], mods...)
		} else {
			j.Sections[name] = mods
		}
	}
	return j, nil
}

type jaasToken struct {
	text   string
	quoted bool
	line   int
}

type jaasParser struct {
	toks []jaasToken
	pos  int
}

func (p *jaasParser) done() bool { return p.pos >= len(p.toks) }

func (p *jaasParser) next() jaasToken {
	t := p.toks[p.pos]
	p.pos++
	return t
}

func (p *jaasParser) peekIs(s string) bool {
	return !p.done() && !p.toks[p.pos].quoted && p.toks[p.pos].text == s
}

func (p *jaasParser) lastLine() int {
	if len(p.toks) == 0 {
		return 1
	}
	if p.done() {
		return p.toks[len(p.toks)-1].line
	}
	return p.toks[p.pos].line
}

func (p *jaasParser) expect(s string) error {
	if !p.peekIs(s) {
		got := "end of file"
		if !p.done() {
			got = fmt.Sprintf("%q", p.toks[p.pos].text)
		}
		return fmt.Errorf("line %d: expected %q, found %s", p.lastLine(), s, got)
	}
	p.pos++
	return nil
}

func (p *jaasParser) word(what string) (string, error) {
	if p.done() {
		return "", fmt.Errorf("line %d: expected %s, found end of file", p.lastLine(), what)
	}
	t := p.next()
	if !t.quoted && isJAASPunct(t.text) {
		return "", fmt.Errorf("line %d: expected %s, found %q", t.line, what, t.text)
	}
	return t.text, nil
}

func (p *jaasParser) module() (LoginModule, error) {
	class, err := p.word("login module class")
	if err != nil {
		return LoginModule{}, err
	}
	flag, err := p.word("control flag")
	if err != nil {
		return LoginModule{}, err
	}
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return LoginModule{}, fmt.Errorf("line %d: login module %s: control flag %q is not required, requisite, sufficient or optional", p.lastLine(), class, flag)
	}
	m := LoginModule{Class: class, Flag: strings.ToLower(flag), Options: map[string]string{}}
	for !p.peekIs(";") {
		key, err := p.word("option name or ';'")
		if err != nil {
			return LoginModule{}, err
		}
		if err := p.expect("="); err != nil {
			return LoginModule{}, err
		}
		val, err := p.word("option value")
		if err != nil {
			return LoginModule{}, err
		}
		m.Options[key] = val
	}
	p.next() // ;
	return m, nil
}

func isJAASPunct(s string) bool { return s == "{" || s == "}" || s == ";" || s == "=" }

// jaasTokens splits the text into words, quoted strings and the
// punctuation { } ; =, dropping comments.
func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	line := 1
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '\n':
			line++
			i++
		case unicode.IsSpace(r):
			i++
		case r == '#' || (r == '/' && i+1 < len(rs) && rs[i+1] == '/'):
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '/' && i+1 < len(rs) && rs[i+1] == '*':
			start := line
			i += 2
			for i+1 < len(rs) && (rs[i] != '*' || rs[i+1] != '/') {
				if rs[i] == '\n' {
					line++
				}
				i++
			}
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("line %d: unterminated /* comment", start)
			}
			i += 2
		case r == '{' || r == '}' || r == ';' || r == '=':
			out = append(out, jaasToken{text: string(r), line: line})
			i++
		case r == '"':
			start := line
			var b strings.Builder
			i++
			for ; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) {
					i++
				}
				if rs[i] == '\n' {
					line++
				}
				b.WriteRune(rs[i])
			}
			if i >= len(rs) {
				return nil, fmt.Errorf("line %d: unterminated quoted string", start)
			}
			i++
			out = append(out, jaasToken{text: b.String(), quoted: true, line: start})
		default:
			j := i
			for j < len(rs) && !unicode.IsSpace(rs[j]) && !strings.ContainsRune("{};=\"#", rs[j]) &&
				!(rs[j] == '/' && j+1 < len(rs) && (rs[j+1] == '/' || rs[j+1] == '*')) {
				j++
			}
			out = append(out, jaasToken{text: string(rs[i:j]), line: line})
			i = j
		}
	}
	return out, nil
}

// Module returns the first module of a section with the given class.
func (j *JAAS) Module(section, class string) (LoginModule, bool) {
	for _, m := range j.Sections[section] {
		if m.Class == class {
			return m, true
		}
	}
	return LoginModule{}, false
}
