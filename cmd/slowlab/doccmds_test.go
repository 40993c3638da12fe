package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab"
)

// The command lines the docs show, checked as slowlab parses them today.
//
// What is a command: a line of a fenced block, a `# ` comment line of
// examples/*.yaml, or a span in backquotes, in which (after `$ `, env
// assignments, sudo, time, do/then, and split at | || && ; &, with
// redirections and # comments dropped) a part starts with slowlab,
// ./slowlab, DIR/slowlab, go run ./cmd/slowlab or slowlab-exporter (as
// slowlab exporter); a line ending in \ goes on on the next. Sources:
// every tracked *.md and examples/*.yaml.
//
// How each is checked, from the repository's root (where `go run
// ./cmd/slowlab` is run):
//
//   - full: a command without placeholders goes through the command's own
//     flag parsing and validation, as a run would, up to its parse-only
//     point (parsedOnly: errParseOnly, nothing started, read or written);
//     --help and --print-scenario pass too. `A | slowlab run -` reads what
//     A printed (A: slowlab reproduce X --print-scenario).
//   - flags: a command with a placeholder (an ALL-CAPS word such as NAME,
//     DIR or I/N, <dir>, ..., a $shell variable, [optional] parts, a|b
//     alternatives, (groups)) is a synopsis: each flag it names must be
//     one `slowlab COMMAND --help` lists, and the flags it gives a
//     concrete value parse with it (that value by the flag's type).
//   - mention: backquoted text that names a command and some of its flags
//     (`slowlab loadgen --http2`, `slowlab loadgen --out`) is not a line
//     to run. When its full check fails on what it leaves out (the first
//     flag the error names is one it does not give, or the error says
//     something is required, or its last flag has no value), it is
//     checked at the flags level instead; the bare command (`slowlab
//     merge`) is only looked up. Any other failure is a problem: a
//     misspelled flag or a bad value is named by the flag it gives.
//   - named: `slowlab help COMMAND`, `slowlab COMMAND --help`, and the
//     lab's own children (slow-load, probe-loop) are only looked up.
//
// Files: a scenario file (`slowlab run FILE`) must be the repository's
// (examples/...). Every other path (a results or shard directory, --out,
// --config, certificates) is the user's own, checked only as the command
// checks it before it runs (an --out that holds results is refused; a
// results directory given to report, merge or assess --combine is data,
// not looked at).

// docLine is one command as a page shows it.
type docLine struct {
	file   string
	line   int
	text   string // continuations joined
	inline bool   // backquoted in the text, not a line of a block
}

// docProblem is a command line that does not parse.
type docProblem struct {
	file string
	line int
	text string
	err  string
}

func (p docProblem) String() string {
	return fmt.Sprintf("%s:%d: `%s`: %s", p.file, p.line, p.text, p.err)
}

// TestDocCommandsParse checks every slowlab command line of the tracked
// markdown and examples/*.yaml (see above).
func TestDocCommandsParse(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "--cached", "--others", "--exclude-standard", "*.md", "examples/*.yaml").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	files := strings.Fields(string(out))
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/commands.md") {
		t.Fatalf("git ls-files listed %v, want README.md and docs/", files)
	}
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	t.Chdir(repoRoot)
	counts := map[string]int{}
	for _, f := range files {
		for _, d := range docLines(f, texts[f]) {
			for _, p := range checkDocLine(d, counts) {
				t.Error(p)
			}
		}
	}
	t.Logf("commands checked: %v", counts)
	if counts["full"] < 60 || counts["flags"] < 10 {
		t.Errorf("%d commands checked in full, %d at the flags level: want at least 60 and 10 (did the extraction break?)", counts["full"], counts["flags"])
	}
}

// docLines are the command lines of one file.
func docLines(file, text string) []docLine {
	if strings.HasSuffix(file, ".yaml") {
		return yamlCommentLines(file, text)
	}
	var out []docLine
	var para []numberedLine
	flush := func() { out, para = append(out, inlineCommands(file, para)...), nil }
	lines := strings.Split(text, "\n")
	fence := ""
	for i := 0; i < len(lines); i++ {
		trim := strings.TrimSpace(lines[i])
		switch {
		case fence != "" && strings.HasPrefix(trim, fence):
			fence = ""
		case fence != "":
			start := i
			l := trim
			for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
			}
			if len(slowlabParts(l)) > 0 {
				out = append(out, docLine{file: file, line: start + 1, text: l})
			}
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			flush()
			fence = trim[:3]
		case trim == "":
			flush()
		default:
			para = append(para, numberedLine{i + 1, lines[i]})
		}
	}
	flush()
	return out
}

// yamlCommentLines are the commands of a YAML file's comments: a comment
// that is a command, or backquoted in one.
func yamlCommentLines(file, text string) []docLine {
	var out []docLine
	var para []numberedLine
	for i, l := range strings.Split(text, "\n") {
		c, ok := strings.CutPrefix(strings.TrimSpace(l), "#")
		if !ok {
			out, para = append(out, inlineCommands(file, para)...), nil
			continue
		}
		if c = strings.TrimSpace(c); !strings.Contains(c, "`") && len(slowlabParts(c)) > 0 {
			out = append(out, docLine{file: file, line: i + 1, text: c})
		}
		para = append(para, numberedLine{i + 1, c})
	}
	return append(out, inlineCommands(file, para)...)
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// inlineCommands are the backquoted commands of a paragraph (a span may
// go on over a line break).
func inlineCommands(file string, para []numberedLine) []docLine {
	var text strings.Builder
	var starts []int
	for _, l := range para {
		starts = append(starts, text.Len())
		text.WriteString(l.text + "\n")
	}
	var out []docLine
	for _, m := range backquoted.FindAllStringSubmatchIndex(text.String(), -1) {
		span := strings.Join(strings.Fields(text.String()[m[2]:m[3]]), " ")
		if len(slowlabParts(span)) == 0 {
			continue
		}
		i, _ := slices.BinarySearch(starts, m[0]+1)
		out = append(out, docLine{file: file, line: para[i-1].line, text: span, inline: true})
	}
	return out
}

// shellWord is a word of a command line, quotes removed (text), as
// written (raw), and its unquoted characters (bare).
type shellWord struct {
	text, raw, bare string
	op              string // an operator instead: | || && ; & or > (a redirection)
}

// shellWords splits a line as sh would for these checks: a | between
// spaces, || && ; & are operators; a redirection (2>&1, > FILE, < FILE)
// is an operator ">" and its target dropped; # at a word's start ends it.
func shellWords(line string) []shellWord {
	var words []shellWord
	var cur shellWord
	in := false
	var quote rune
	end := func() {
		if in {
			words = append(words, cur)
		}
		cur, in = shellWord{}, false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		next := func(k int) rune {
			if i+k < len(rs) {
				return rs[i+k]
			}
			return 0
		}
		switch {
		case quote != 0:
			cur.raw += string(r)
			if r == quote {
				quote = 0
			} else {
				cur.text += string(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
			cur.raw += string(r)
		case r == ' ' || r == '\t':
			end()
		case r == '#' && !in:
			end()
			return words
		case r == '|' && !in && (next(1) == ' ' || next(1) == '|' || next(1) == 0):
			end()
			op := "|"
			if next(1) == '|' {
				op, i = "||", i+1
			}
			words = append(words, shellWord{op: op})
		case (r == '>' || r == '<') && !placeholderWord(string(rs[i:])), r == '&' && next(1) == '>':
			// A redirection: an fd number before it goes, and its
			// target: &1, or the next word.
			if in && strings.Trim(cur.text, "0123456789") == "" {
				cur, in = shellWord{}, false
			}
			end()
			for i+1 < len(rs) && (rs[i+1] == '>' || rs[i+1] == '<') {
				i++
			}
			op := ">"
			if i+1 < len(rs) && rs[i+1] == '&' {
				for i++; i+1 < len(rs) && rs[i+1] >= '0' && rs[i+1] <= '9'; i++ {
				}
				op = ">&"
			}
			words = append(words, shellWord{op: op})
		case r == '&' || r == ';':
			end()
			op := string(r)
			if r == '&' && next(1) == '&' {
				op, i = "&&", i+1
			}
			words = append(words, shellWord{op: op})
		default:
			cur.text, cur.raw, cur.bare, in = cur.text+string(r), cur.raw+string(r), cur.bare+string(r), true
		}
	}
	end()
	// A redirection's target is no argument.
	var out []shellWord
	for i := 0; i < len(words); i++ {
		switch words[i].op {
		case ">":
			if i+1 < len(words) && words[i+1].op == "" {
				i++
			}
		case ">&":
		default:
			out = append(out, words[i])
		}
	}
	return out
}

// slowlabPart is one slowlab command of a line: its arguments after the
// program, and what fed its standard input (the part before a |).
type slowlabPart struct {
	args     []shellWord
	pipeFrom *slowlabPart
}

// slowlabParts are the slowlab commands of a line. A | followed by a flag
// or [ is a synopsis's alternative (--keepalive | --http2), not a pipe.
func slowlabParts(line string) []*slowlabPart {
	line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
	var parts [][]shellWord
	var ops []string
	cur := []shellWord{}
	words := shellWords(line)
	for i, w := range words {
		switch {
		case w.op == "|" && i+1 < len(words) && (strings.HasPrefix(words[i+1].raw, "-") || strings.HasPrefix(words[i+1].raw, "[")):
			cur = append(cur, shellWord{text: "|", raw: "|", bare: "|"})
		case w.op != "":
			parts, ops, cur = append(parts, cur), append(ops, w.op), []shellWord{}
		default:
			cur = append(cur, w)
		}
	}
	parts = append(parts, cur)
	var out []*slowlabPart
	var prev *slowlabPart
	for i, p := range parts {
		args, ok := slowlabArgs(p)
		if !ok {
			prev = nil
			continue
		}
		sp := &slowlabPart{args: args}
		if i > 0 && ops[i-1] == "|" {
			sp.pipeFrom = prev
		}
		out, prev = append(out, sp), sp
	}
	return out
}

var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// slowlabArgs are the arguments of a slowlab command, after its prefixes
// and program; ok is false for a part that runs another program.
func slowlabArgs(p []shellWord) ([]shellWord, bool) {
	for len(p) > 0 && (envAssignment.MatchString(p[0].raw) || slices.Contains([]string{"sudo", "time", "nohup", "exec", "env", "do", "then", "else"}, p[0].raw)) {
		p = p[1:]
	}
	switch {
	case len(p) >= 3 && p[0].raw == "go" && p[1].raw == "run" && strings.TrimSuffix(p[2].raw, "/") == "./cmd/slowlab":
		return p[3:], true
	case len(p) > 0 && (p[0].raw == "slowlab" || strings.HasSuffix(p[0].raw, "/slowlab") && len(p) > 1):
		return p[1:], true
	case len(p) > 0 && (p[0].raw == "slowlab-exporter" || strings.HasSuffix(p[0].raw, "/slowlab-exporter")):
		return append([]shellWord{{text: "exporter", raw: "exporter", bare: "exporter"}}, p[1:]...), true
	}
	return nil, false
}

var (
	placeholderAny  = regexp.MustCompile(`\.\.\.|…|\$|(^|[^A-Za-z])[A-Z]+([^A-Za-z]|$)`)
	placeholderBare = regexp.MustCompile(`[\[\]()|]|<[A-Za-z][^<>\s]*>`)
)

// placeholderWord reports a word that stands for a value the user gives:
// ..., a $variable, an ALL-CAPS word; unquoted, [ ] ( ) | or <name>.
func placeholderWord(s string) bool {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		s = s[:i]
	}
	return placeholderBare.MatchString(s)
}

func isPlaceholder(w shellWord) bool {
	return placeholderAny.MatchString(w.raw) || placeholderBare.MatchString(w.bare)
}

// checkDocLine checks each slowlab command of d, counting how (full,
// flags, mention, named), and returns its problems.
func checkDocLine(d docLine, counts map[string]int) []docProblem {
	var problems []docProblem
	outs := map[*slowlabPart][]byte{}
	for _, p := range slowlabParts(d.text) {
		var stdinText []byte
		if p.pipeFrom != nil {
			stdinText = outs[p.pipeFrom]
		}
		how, out, err := checkPart(p, d.inline, stdinText)
		outs[p] = out
		if how == "" {
			continue
		}
		counts[how]++
		if err != nil {
			problems = append(problems, docProblem{d.file, d.line, d.text, err.Error()})
		}
	}
	return problems
}

// checkPart checks one command: how it was checked, what it printed on
// stdout (a --print-scenario's scenario), and what is wrong with it.
func checkPart(p *slowlabPart, inline bool, piped []byte) (how string, stdout []byte, err error) {
	args := make([]string, len(p.args))
	for i, w := range p.args {
		args[i] = w.text
	}
	switch {
	case len(args) == 0:
		return "", nil, nil // slowlab's name, a path (/usr/bin/slowlab)
	case args[0] == "-h", args[0] == "--help":
		return "named", nil, nil // slowlab's usage
	case !commandWord.MatchString(args[0]):
		return "", nil, nil // not a command: a message (`slowlab record: ...`), a table's row
	case args[0] == "help" && len(args) > 1 && isPlaceholder(p.args[1]):
		return "named", nil, nil // slowlab help COMMAND
	case args[0] == "help" && len(args) > 1:
		args = []string{args[1], "--help"}
	case args[0] == "--version" || args[0] == "-version":
		args = []string{"version"}
	}
	if isPlaceholder(p.args[0]) && args[0] != "version" {
		return "named", nil, nil // slowlab COMMAND --help
	}
	c, ok := commands[args[0]]
	switch {
	case !ok:
		return "named", nil, fmt.Errorf("unknown command %q (allowed: %s)", args[0], strings.Join(commandNames(), ", "))
	case args[0] == "slow-load" || args[0] == "probe-loop":
		return "named", nil, nil // the lab's children, never run by hand
	case len(args) == 1 && inline:
		return "mention", nil, nil
	}
	if slices.ContainsFunc(p.args[1:], isPlaceholder) || args[0] == "run" && len(args) > 1 && args[1] == "-" && piped == nil {
		return "flags", nil, flagsLevel(args, p.args)
	}
	out, err := parseOnly(c, args[1:], piped)
	switch {
	case errors.Is(err, errParseOnly), errors.Is(err, flag.ErrHelp):
		return "full", out, nil
	case err == nil && slices.Contains(args, "--print-scenario"):
		return "full", out, nil
	case err == nil:
		return "full", out, fmt.Errorf("slowlab %s ran past its parse-only point: give it a parsedOnly check", args[0])
	case inline && isMention(args, err):
		if ferr := flagsLevel(args, p.args); ferr != nil {
			return "mention", nil, ferr
		}
		return "mention", nil, nil
	}
	return "full", out, err
}

var commandWord = regexp.MustCompile(`^-{0,2}[a-z][a-z0-9-]*$`)

// parseOnly runs c's parsing and validation, nothing more (parsedOnly),
// with stdin for `slowlab run -`; its context is cancelled beforehand, so
// a command without the seam would stop at once.
func parseOnly(c command, args []string, stdinText []byte) ([]byte, error) {
	ctx, cancel := context.WithCancel(withParseOnly(context.Background()))
	cancel()
	saved := stdin
	defer func() { stdin = saved }()
	stdin = bytes.NewReader(stdinText)
	var out, errOut bytes.Buffer
	err := c.run(ctx, args, &out, &errOut)
	return out.Bytes(), err
}

// flagsLevel checks a synopsis (or a mention): every flag it names is one
// `slowlab COMMAND --help` lists, and those given a concrete value parse
// with it (the flags alone, then --help, which stops the command).
func flagsLevel(args []string, words []shellWord) error {
	head := []string{args[0]}
	rest := words[1:]
	switch {
	case args[0] == "reproduce" && len(rest) > 0 && !strings.HasPrefix(rest[0].text, "-"):
		exp := rest[0]
		rest = rest[1:]
		if !isPlaceholder(exp) {
			head = append(head, exp.text)
			break
		}
		// EXPERIMENT, NAME: any; a|b: each.
		names := strings.Split(exp.text, "|")
		if len(names) == 1 || slices.ContainsFunc(names, func(n string) bool { return isPlaceholder(shellWord{raw: n}) }) {
			return flagNamesOnly(rest)
		}
		for _, n := range names {
			w := append([]shellWord{words[0], {text: n, raw: n, bare: n}}, rest...)
			if err := flagsLevel([]string{"reproduce", n}, w); err != nil {
				return err
			}
		}
		return nil
	case args[0] == "run" && len(rest) > 0 && !strings.HasPrefix(rest[0].text, "-"):
		if f := rest[0]; f.text != "-" && !isPlaceholder(f) {
			if _, err := os.Stat(f.text); err != nil {
				return fmt.Errorf("scenario %s: not in the repository (%v)", f.text, unwrapPathError(err))
			}
		}
		rest = rest[1:]
	case args[0] == "assess" && slices.Contains(args, "--combine"):
		head = append(head, "--combine")
	}
	listed, err := listedFlags(head)
	if err != nil {
		return err
	}
	concrete := slices.Clone(head)
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		name := strings.Trim(w.text, "[]()")
		if !strings.HasPrefix(name, "-") || name == "-" || name == "--combine" && head[len(head)-1] == "--combine" {
			continue // a positional: a directory, a placeholder, |
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(name, "-"), "=")
		takes, ok := listed[name]
		if name == "help" || name == "h" {
			continue
		}
		if !ok {
			return fmt.Errorf("--%s: not a flag of slowlab %s (see its --help)", name, strings.Join(head, " "))
		}
		switch {
		case hasValue && !isPlaceholder(w):
			concrete = append(concrete, "--"+name+"="+value)
		case hasValue:
		case !takes:
			concrete = append(concrete, "--"+name)
		case i+1 < len(rest):
			i++
			if !isPlaceholder(rest[i]) && !isPlaceholder(w) {
				concrete = append(concrete, "--"+name, rest[i].text)
			}
		}
	}
	if _, err := parseOnly(commands[args[0]], append(concrete[1:], "--help"), nil); !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errParseOnly) {
		return fmt.Errorf("its flags %q: %v", concrete[1:], err)
	}
	return nil
}

// listedFlags are the flags `slowlab HEAD --help` lists (flag.PrintDefaults:
// "  -name type" for a flag that takes a value, "  -name" for a bool),
// each true if it takes a value. A reproduce without an experiment lists
// every experiment's.
func listedFlags(head []string) (map[string]bool, error) {
	if len(head) == 1 && head[0] == "reproduce" {
		all := map[string]bool{}
		for _, n := range lab.Names() {
			l, err := listedFlags([]string{"reproduce", n})
			if err != nil {
				return nil, err
			}
			for k, v := range l {
				all[k] = v
			}
		}
		return all, nil
	}
	// --help stops every command before it does anything: no parse-only
	// context needed (the exporter's would drop the usage).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	err := commands[head[0]].run(ctx, append(slices.Clone(head[1:]), "--help"), &out, &errOut)
	if !errors.Is(err, flag.ErrHelp) {
		return nil, fmt.Errorf("slowlab %s --help: %v", strings.Join(head, " "), err)
	}
	listed := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
		listed[m[1]] = m[2] != ""
	}
	return listed, nil
}

var helpFlag = regexp.MustCompile(`(?m)^  -([^\s]+)( [^\s]+)?$`)

var firstFlag = regexp.MustCompile(`(?:^|[\s"'(])--?([a-z][a-z0-9.-]*[a-z0-9])`)

// isMention reports a backquoted command whose full check failed on what
// it leaves out: a flag it does not give (the first one the error names),
// or one it says is required, or its last flag, left without a value.
func isMention(args []string, err error) bool {
	msg := err.Error()
	m := firstFlag.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	given := func(name string) bool {
		return slices.ContainsFunc(args[1:], func(a string) bool {
			n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			return strings.HasPrefix(a, "-") && n == name
		})
	}
	last := strings.TrimLeft(args[len(args)-1], "-")
	return !given(m[1]) || strings.Contains(msg, " is required") || strings.Contains(msg, "flag needs an argument") && m[1] == last
}

// flagNamesOnly checks the flags of a synopsis of any experiment
// (slowlab reproduce NAME --print-scenario): each is one experiment's.
func flagNamesOnly(rest []shellWord) error {
	listed, err := listedFlags([]string{"reproduce"})
	if err != nil {
		return err
	}
	for _, w := range rest {
		name, _, _ := strings.Cut(strings.TrimLeft(strings.Trim(w.text, "[]()"), "-"), "=")
		if strings.HasPrefix(strings.Trim(w.text, "[]()"), "-") && name != "help" && !isPlaceholder(w) {
			if _, ok := listed[name]; !ok {
				return fmt.Errorf("--%s: no experiment's flag (see slowlab reproduce EXPERIMENT --help)", name)
			}
		}
	}
	return nil
}

// TestDocCommandsCheckFails feeds the check a corrupted page: each broken
// line is named, FILE:LINE and the parse error; the good ones are not.
func TestDocCommandsCheckFails(t *testing.T) {
	page := strings.Join([]string{
		"# A page", // 1
		"",
		"```sh",
		"slowlab reproduce slow-client --quick --stak embedded",  // 4: a misspelled flag
		"slowlab reproduce slow-clinet --quick",                  // 5: an unknown experiment
		"slowlab loadgen --target http://127.0.0.1:8000/fast \\", // 6: a bad duration, on the line after
		"  --duration 60 --rate 10 > out.txt 2>&1",
		"slowlab assess --stack real --probes slow-readers,slowlorris",                         // 8: an unknown probe
		"OTEL_TRACES_EXPORTER=console slowlab reproduce slow-client --stack embeded",           // 9: an unknown stack
		"slowlab run examples/no-such.yaml",                                                    // 10: no such scenario
		"go run ./cmd/slowlab reproduce slow-client --quick --stack embedded --max-host-cpu 0", // good
		"slowlab reproduce long-poll --print-scenario | slowlab run - --reps 2",                // good
		"slowlab reproduce sse --print-scenario | slowlab run - --max-schedule-lag 1",          // 13: run - --max-schedule-lag, no duration
		"```",
		"",
		"A synopsis, `slowlab loadgen --target URL [--rat R]`, a mention, `slowlab loadgen --http2`, and", // 16: --rat
		"`slowlab assess --stack real",
		"--idel-max 10s` over a line break, and `slowlab reproduce NAME --qick`.", // 17: --idel-max; 18: --qick
	}, "\n")
	t.Chdir(repoRoot)
	var got []string
	counts := map[string]int{}
	scenario := "# Run it:\n#   slowlab run examples/own-workers.yaml --reps 0\n# or `slowlab reproduce slow-client\n# --print-scenario --quik`\nexperiment: slow-client\n"
	for file, text := range map[string]string{"docs/broken.md": page, "examples/broken.yaml": scenario} {
		for _, d := range docLines(file, text) {
			for _, p := range checkDocLine(d, counts) {
				got = append(got, p.String())
			}
		}
	}
	want := []struct{ where, err string }{
		{"docs/broken.md:4: `slowlab reproduce slow-client --quick --stak embedded`", "flag provided but not defined: -stak"},
		{"docs/broken.md:5: `slowlab reproduce slow-clinet --quick`", "slow-clinet"},
		{"docs/broken.md:6: `slowlab loadgen --target http://127.0.0.1:8000/fast  --duration 60 --rate 10 > out.txt 2>&1`", `invalid value "60" for flag -duration`},
		{"docs/broken.md:8: ", "slowlorris"},
		{"docs/broken.md:9: ", "embeded"},
		{"docs/broken.md:10: ", "examples/no-such.yaml"},
		{"docs/broken.md:13: ", "-max-schedule-lag"},
		{"docs/broken.md:16: `slowlab loadgen --target URL [--rat R]`", "--rat: not a flag of slowlab loadgen"},
		{"docs/broken.md:17: `slowlab assess --stack real --idel-max 10s`", "flag provided but not defined: -idel-max"},
		{"docs/broken.md:18: `slowlab reproduce NAME --qick`", "--qick: no experiment's flag"},
		{"examples/broken.yaml:2: `slowlab run examples/own-workers.yaml --reps 0`", "--reps 0: allowed 1 to"},
		{"examples/broken.yaml:3: `slowlab reproduce slow-client --print-scenario --quik`", "flag provided but not defined: -quik"},
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w.where) && strings.Contains(g, w.err) }) {
			t.Errorf("no problem %s...%s among:\n%s", w.where, w.err, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d (the good lines none):\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	if counts["full"] < 14 || counts["flags"] != 2 || counts["mention"] != 1 {
		t.Errorf("checked %v: want 14 full or more, 2 at the flags level, 1 mention", counts)
	}
}

// TestEveryCommandStopsWhenParseOnly runs each command a user runs on a
// valid command line with a parse-only context: each stops at its
// parse-only point, so the docs' check runs none of them.
func TestEveryCommandStopsWhenParseOnly(t *testing.T) {
	lines := map[string][]string{
		"assess":    {"--stack", "embedded"},
		"cleanup":   {"--dry-run"},
		"exporter":  {"--group", "app=pid:1"},
		"loadgen":   {"--target", "http://127.0.0.1:1/fast"},
		"merge":     {"--out", "merged", "shard-0"},
		"proxy":     {"--buffering", "on", "--upstream", "127.0.0.1:1"},
		"record":    {"--scrape", "http://127.0.0.1:1/metrics", "--out", "rec"},
		"report":    {"results-dir"},
		"reproduce": {"slow-client", "--quick"},
		"run":       {"examples/own-workers.yaml"},
		"target":    {"--model", "sync"},
		"version":   nil,
	}
	t.Chdir(repoRoot)
	for _, name := range commandNames() {
		args, ok := lines[name]
		switch {
		case name == "slow-load" || name == "probe-loop":
			continue // the lab's children, never run by hand
		case !ok:
			t.Errorf("slowlab %s: no command line here: add one, and a parsedOnly check to the command", name)
			continue
		}
		if _, err := parseOnly(commands[name], args, nil); !errors.Is(err, errParseOnly) {
			t.Errorf("slowlab %s %s with a parse-only context: %v, want %v", name, strings.Join(args, " "), err, errParseOnly)
		}
	}
}
