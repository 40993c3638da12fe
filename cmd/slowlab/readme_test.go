package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/assess"
	"github.com/slowlab/slowlab/recorder"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// awaitingMark, in the paragraph that introduces a README table, says the
// table was printed by an older printer and has not been rerun yet. Such
// a table is not held to the printer's header (the test logs how it
// differs) but it must differ (a mark left on a table that matches fails)
// and its rows must still line up under its own header.
const awaitingMark = "awaiting a rerun"

// commandPrefixes start the commands whose printed output the README shows.
var commandPrefixes = []string{"go run ./cmd/slowlab ", "slowlab "}

// TestREADMETablesMatchPrinters reads every fenced block of README.md and
// of the pages under docs/ that shows what an experiment printed (the
// command is on the block's first line after "$ ", or is the last slowlab
// command in backquotes in the paragraph before it), and checks it against
// what that experiment's printer prints now, the experiment found through
// the registry (`slowlab run FILE` through the scenario's experiment:):
// the same header, and every row one value per column, each under its
// column. A block may show several tables (latency-gap prints its page
// loads' below its requests'): each is held to the printer's table of the
// same header. Every experiment has a page with at least one such table.
func TestREADMETablesMatchPrinters(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/*.md: %d pages (%v)", len(pages), err)
	}
	printers := map[string][]printedTable{}
	for _, e := range lab.Experiments() {
		p, err := printerTables(e.NewResult())
		if err != nil {
			t.Errorf("%s's printer: %v", e.Name, err)
			continue
		}
		printers[e.Name] = p
	}
	// slowlab assess is no experiment, but its verdict tables are checked
	// the same way.
	p, err := printerTables(&assess.Result{})
	if err != nil {
		t.Errorf("assess's printer: %v", err)
	}
	printers[assess.Name] = p
	tabled := map[string]int{}
	for _, page := range append([]string{filepath.Join(repoRoot, "README.md")}, pages...) {
		for name, n := range checkTables(t, page, printers) {
			tabled[name] += n
		}
	}
	for _, name := range append(lab.Names(), assess.Name) {
		if tabled[name] == 0 {
			t.Errorf("%s: no table of its output in README.md or docs/", name)
		}
	}
	t.Logf("tables checked per experiment: %v", tabled)
}

// checkTables checks the experiment tables of one markdown file against
// the printers, returning how many it checked per experiment.
func checkTables(t *testing.T, file string, printers map[string][]printedTable) map[string]int {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := filepath.Rel(repoRoot, file)
	checked := map[string]int{}
	for _, b := range fencedBlocks(string(text)) {
		tables, err := readmeTables(b)
		if err != nil {
			t.Errorf("%s:%d: %v", name, b.line, err)
			continue
		}
		for i, tb := range tables {
			ps, found := printers[tb.experiment]
			if !found {
				continue // its printer failed, said above
			}
			checked[tb.experiment]++
			t.Logf("%s:%d: %s table of `%s`, %d rows", name, tb.headerLine, tb.experiment, tb.command, len(tb.rows))
			where := fmt.Sprintf("%s:%d, the %s table printed by `%s`", name, tb.headerLine, tb.experiment, tb.command)
			problems, note := tableProblems(tb, samePrinted(ps, tb.header, i))
			if note != "" {
				t.Logf("%s: %s", where, note)
			}
			for _, pr := range problems {
				t.Errorf("%s: %s", where, pr)
			}
		}
	}
	return checked
}

// samePrinted is the table of ps whose header is header, else the i-th
// (the first when the printer prints fewer): what the i-th table of a
// block is held to.
func samePrinted(ps []printedTable, header string, i int) printedTable {
	for _, p := range ps {
		if slices.Equal(strings.Fields(p.header), strings.Fields(header)) {
			return p
		}
	}
	if i < len(ps) {
		return ps[i]
	}
	return ps[0]
}

// mdBlock is a fenced block of a markdown file.
type mdBlock struct {
	line  int    // 1-based line of its first content line
	intro string // the text since the previous block or heading, lines joined by spaces
	lines []string
}

func fencedBlocks(text string) []mdBlock {
	var blocks []mdBlock
	var intro []string
	var cur *mdBlock
	for i, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && cur != nil:
			blocks, cur, intro = append(blocks, *cur), nil, nil
		case strings.HasPrefix(l, "```"):
			cur = &mdBlock{line: i + 2, intro: strings.Join(intro, " ")}
		case cur != nil:
			cur.lines = append(cur.lines, l)
		case strings.HasPrefix(l, "#"):
			intro = nil
		default:
			intro = append(intro, l)
		}
	}
	return blocks
}

// textTable is an experiment's table as the README shows it.
type textTable struct {
	experiment, command string
	awaiting            bool
	header              string
	headerLine          int
	rows                []numberedLine
}

type numberedLine struct {
	line int
	text string
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// blockCommand is the command whose output b shows and the lines of that
// output; ok is false for a block that is no command's output (a list of
// commands to run, or text no slowlab command introduces).
func blockCommand(b mdBlock) (cmd string, first int, ok bool) {
	if i := slices.IndexFunc(b.lines, func(l string) bool { return strings.TrimSpace(l) != "" }); i >= 0 {
		switch l := b.lines[i]; {
		case strings.HasPrefix(l, "$ "):
			return strings.TrimPrefix(l, "$ "), i + 1, true
		case hasCommandPrefix(l):
			return "", 0, false // commands, not their output
		}
	}
	for _, m := range slices.Backward(inlineCode.FindAllStringSubmatch(b.intro, -1)) {
		if hasCommandPrefix(m[1]) {
			return m[1], 0, true
		}
	}
	return "", 0, false
}

func hasCommandPrefix(s string) bool {
	return slices.ContainsFunc(commandPrefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// commandExperiment is the experiment a command runs, "" for a slowlab
// command that runs none (slowlab loadgen).
func commandExperiment(cmd string) (string, error) {
	for _, p := range commandPrefixes {
		if strings.HasPrefix(cmd, p) {
			cmd = strings.TrimPrefix(cmd, p)
			break
		}
	}
	args := strings.Fields(cmd)
	if len(args) > 0 && args[0] == assess.Name {
		return assess.Name, nil
	}
	if len(args) < 2 || (args[0] != "reproduce" && args[0] != "run") {
		return "", nil
	}
	name := args[1]
	if args[0] == "run" {
		b, err := os.ReadFile(filepath.Join(repoRoot, args[1]))
		if err != nil {
			return "", fmt.Errorf("the scenario of `%s`: %w", cmd, err)
		}
		var h lab.Header
		if err := yaml.Unmarshal(b, &h); err != nil {
			return "", fmt.Errorf("the scenario of `%s`: %w", cmd, err)
		}
		name = h.Experiment
	}
	if _, err := lab.Lookup(name); err != nil {
		return "", fmt.Errorf("`%s`: %w", cmd, err)
	}
	return name, nil
}

// readmeTable is the first of the experiment's tables that b shows; ok is
// false for a block that shows none (commands, or printed text without a
// table such as long-poll's summary over the repetitions).
func readmeTable(b mdBlock) (textTable, bool, error) {
	tables, err := readmeTables(b)
	if err != nil || len(tables) == 0 {
		return textTable{}, false, err
	}
	return tables[0], true, nil
}

// readmeTables are the experiment's tables that b shows, in order: the
// first as splitTable finds it, then every further one with a row (a line
// of words after a table and a blank line is text, not a table).
func readmeTables(b mdBlock) ([]textTable, error) {
	cmd, first, ok := blockCommand(b)
	if !ok {
		return nil, nil
	}
	exp, err := commandExperiment(cmd)
	if err != nil || exp == "" {
		return nil, err
	}
	lines := make([]numberedLine, 0, len(b.lines)-first)
	for i := first; i < len(b.lines); i++ {
		lines = append(lines, numberedLine{b.line + i, b.lines[i]})
	}
	var tables []textTable
	for _, st := range splitTables(lines) {
		tables = append(tables, textTable{experiment: exp, command: cmd, awaiting: strings.Contains(b.intro, awaitingMark),
			header: st.header.text, headerLine: st.header.line, rows: st.rows})
	}
	return tables, nil
}

// splitTables are the tables of lines: the first as splitTable finds it,
// then each further one that has a row.
func splitTables(lines []numberedLine) []splitted {
	var out []splitted
	for len(lines) > 0 {
		header, rows, next, ok := splitTable(lines)
		if !ok {
			break
		}
		if len(out) == 0 || len(rows) > 0 {
			out = append(out, splitted{header, rows})
		}
		lines = lines[next:]
	}
	return out
}

// splitted is a table splitTable found.
type splitted struct {
	header numberedLine
	rows   []numberedLine
}

// isSection reports a line that heads a part of a table or says something
// about it ("kernel wmem=1m ...: tcp_wmem ...", "over the repetitions:"):
// one of its words ends with a colon, which no column name nor value does.
func isSection(l string) bool {
	return slices.ContainsFunc(strings.Fields(l), func(f string) bool { return strings.HasSuffix(f, ":") })
}

// isProse reports a line of text under a table (buffer-sweep's legend):
// one of its words ends with a comma or a full stop, which no column name
// does.
func isProse(l string) bool {
	return slices.ContainsFunc(strings.Fields(l), func(f string) bool {
		return strings.HasSuffix(f, ",") || strings.HasSuffix(f, ".")
	})
}

// splitTable finds a table's header (the first line of three words or
// more that is no section line nor prose) and its rows: the lines after it up to a
// blank line, less section lines and repeated headers. After a blank line
// the table goes on only where a section line and the header again follow
// (buffer-sweep prints one part per kernel setting). next is the index
// of the first line after the table.
func splitTable(lines []numberedLine) (header numberedLine, rows []numberedLine, next int, ok bool) {
	h := slices.IndexFunc(lines, func(l numberedLine) bool {
		return len(strings.Fields(l.text)) >= 3 && !isSection(l.text) && !isProse(l.text)
	})
	if h < 0 {
		return numberedLine{}, nil, len(lines), false
	}
	header = lines[h]
	same := func(i int) bool {
		return i < len(lines) && slices.Equal(strings.Fields(lines[i].text), strings.Fields(header.text))
	}
	for i := h + 1; i < len(lines); i++ {
		l := lines[i].text
		switch {
		case strings.TrimSpace(l) == "":
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j].text) == "" {
				j++
			}
			if j >= len(lines) || !isSection(lines[j].text) || !same(j+1) {
				return header, rows, i, true
			}
		case isSection(l) || same(i):
		default:
			rows = append(rows, lines[i])
		}
	}
	return header, rows, len(lines), true
}

// printedTable is what an experiment's printer prints for a synthetic
// Result: its header and how many values its rows have.
type printedTable struct {
	header  string
	columns int
}

// printerTables runs e's printer on a Result of e's type with one
// synthetic element in each list, every field set: the tables it prints,
// each with its row lined up under its header.
func printerTables(res lab.Result) (ps []printedTable, err error) {
	fillSynthetic(reflect.ValueOf(res), 0)
	var buf bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Print panicked on a synthetic %T: %v", res, r)
		}
	}()
	res.Print(&buf)
	var lines []numberedLine
	for i, l := range strings.Split(buf.String(), "\n") {
		lines = append(lines, numberedLine{i + 1, l})
	}
	for _, st := range splitTables(lines) {
		if len(st.rows) == 0 {
			continue
		}
		p := printedTable{header: st.header.text, columns: len(strings.Fields(st.rows[0].text))}
		if probs := alignProblems(st.header.text, st.rows[0].text, p.columns); len(probs) > 0 {
			return nil, fmt.Errorf("its row does not line up under its header: %s\n%s\n%s", strings.Join(probs, "; "), st.header.text, st.rows[0].text)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no table with a row in what it printed for a synthetic %T:\n%s", res, buf.String())
	}
	return ps, nil
}

// fillSynthetic sets every settable field under v: strings "x" (a run's
// Status "ok"), numbers 1, booleans true, each slice one element, so that
// a printer prints a row with a value in every column.
func fillSynthetic(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillSynthetic(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			switch {
			case !f.CanSet():
			case v.Type().Field(i).Name == "Status" && f.Kind() == reflect.String:
				f.SetString(recorder.RunOK) // a run that measured, as printers print
			default:
				fillSynthetic(f, depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillSynthetic(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillSynthetic(v.Index(i), depth+1)
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// tableProblems says how tb differs from what its printer prints: its
// header, and each row that does not have one value under each column.
// note says how a table awaiting a rerun differs.
func tableProblems(tb textTable, p printedTable) (problems []string, note string) {
	columns := p.columns
	diff := headerDiff(strings.Fields(tb.header), strings.Fields(p.header))
	switch {
	case tb.awaiting && diff == "":
		problems = append(problems, fmt.Sprintf("marked %q but its header is what the printer prints now: remove the mark", awaitingMark))
	case tb.awaiting:
		note = fmt.Sprintf("%s (header: %s)", awaitingMark, diff)
		columns = len(strings.Fields(tb.header))
	case diff != "":
		problems = append(problems, fmt.Sprintf("header differs from what the %s printer prints now: %s\n  README:  %s\n  printer: %s",
			tb.experiment, diff, strings.TrimSpace(tb.header), strings.TrimSpace(p.header)))
		columns = len(strings.Fields(tb.header))
	}
	if len(tb.rows) == 0 {
		problems = append(problems, "a header and no row")
	}
	for _, r := range tb.rows {
		if probs := alignProblems(tb.header, r.text, columns); len(probs) > 0 {
			problems = append(problems, fmt.Sprintf("row at line %d does not line up under the header: %s", r.line, strings.Join(probs, "; ")))
		}
	}
	return problems, note
}

// headerDiff says how the README's column names differ from the
// printer's, "" when they are the same in the same order.
func headerDiff(readme, printer []string) string {
	if slices.Equal(readme, printer) {
		return ""
	}
	var parts []string
	if missing := without(printer, readme); len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if extra := without(readme, printer); len(extra) > 0 {
		parts = append(parts, "not printed any more: "+strings.Join(extra, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "the same columns in another order")
	}
	return strings.Join(parts, "; ")
}

// without is a's words that b lacks.
func without(a, b []string) []string {
	var out []string
	for _, w := range a {
		if !slices.Contains(b, w) {
			out = append(out, w)
		}
	}
	return out
}

// span is a word of a line and where it is, in bytes.
type span struct {
	start, end int
	text       string
}

var word = regexp.MustCompile(`\S+`)

func spans(l string) []span {
	var out []span
	for _, m := range word.FindAllStringIndex(l, -1) {
		out = append(out, span{m[0], m[1], l[m[0]:m[1]]})
	}
	return out
}

// alignProblems says how row fails to line up under header: a number of
// values other than columns, a value under no word of the header, or a
// value under a header word that the value before it is under too (two
// values in one column, or a value shifted into the next one). A column
// name may be several words (buffer-sweep's "runs ok"); a value need only
// be under one of them.
func alignProblems(header, row string, columns int) []string {
	hs, rs := spans(header), spans(row)
	var probs []string
	if len(rs) != columns {
		probs = append(probs, fmt.Sprintf("%d values for %d columns", len(rs), columns))
	}
	last := -1
	for _, r := range rs {
		lo, hi := -1, -1
		for i, h := range hs {
			if r.start < h.end && h.start < r.end {
				if lo < 0 {
					lo = i
				}
				hi = i
			}
		}
		switch {
		case lo < 0:
			probs = append(probs, fmt.Sprintf("%q (bytes %d-%d) is under no column", r.text, r.start+1, r.end))
		case lo <= last:
			probs = append(probs, fmt.Sprintf("%q is under %q, as the value before it is", r.text, hs[lo].text))
		case r.start != hs[lo].start && r.end != hs[hi].end:
			probs = append(probs, fmt.Sprintf("%q (bytes %d-%d) neither starts nor ends with its column %q (bytes %d-%d)",
				r.text, r.start+1, r.end, header[hs[lo].start:hs[hi].end], hs[lo].start+1, hs[hi].end))
		}
		last = max(last, hi)
	}
	return probs
}

// TestREADMETableCheckFails feeds the check corrupted tables: each must be
// caught, with what is wrong said, and the intact one must pass.
func TestREADMETableCheckFails(t *testing.T) {
	printer := printedTable{header: "route   slow  p95_ms  outcomes(ok/cut)", columns: 4}
	intact := "route   slow  p95_ms  outcomes(ok/cut)\n" +
		"direct     2  5966.5  2/0\n" +
		"proxy      0     1.4  2/0\n"
	cases := []struct {
		name, intro, block string
		want               string // in a problem; "" for none
	}{
		{"intact", "(`slowlab reproduce slow-client`):", intact, ""},
		{"a column missing", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "  p95_ms", "", 1), "missing p95_ms"},
		{"a column the printer dropped", "(`slowlab reproduce slow-client`):",
			strings.Replace(intact, "route   slow", "route   slow  runs", 1), "not printed any more: runs"},
		{"columns swapped", "(`slowlab reproduce slow-client`):",
			"route   p95_ms  slow  outcomes(ok/cut)\ndirect  5966.5     2  2/0\n", "another order"},
		{"a row shifted", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "     1.4", "    1.4 ", 1), "neither starts nor ends"},
		{"a value under no column", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "direct     2  5966.5", "direct 2      5966.5", 1), "under no column"},
		{"a row with a value more", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "2/0\nproxy", "2/0 1\nproxy", 1), "5 values for 4 columns"},
		{"a row with a value less", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "  2/0\nproxy", "\nproxy", 1), "3 values for 4 columns"},
		{"two values in a column", "(`slowlab reproduce slow-client`):", strings.Replace(intact, "1.4  2/0\n", "1.4  2/0 1\n", 1), "as the value before it is"},
		{"a stale mark", "(`slowlab reproduce slow-client`, " + awaitingMark + "):", intact, "remove the mark"},
		{"a header and no row", "(`slowlab reproduce slow-client`):", "route   slow  p95_ms  outcomes(ok/cut)\n", "no row"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := "### x\n\n" + c.intro + "\n\n```\n" + c.block + "```\n"
			blocks := fencedBlocks(text)
			if len(blocks) != 1 {
				t.Fatalf("%d blocks in %q", len(blocks), text)
			}
			tb, ok, err := readmeTable(blocks[0])
			if err != nil || !ok {
				t.Fatalf("no table found: %v", err)
			}
			problems, _ := tableProblems(tb, printer)
			all := strings.Join(problems, "\n")
			switch {
			case c.want == "" && len(problems) > 0:
				t.Errorf("an intact table: %s", all)
			case c.want != "" && !strings.Contains(all, c.want):
				t.Errorf("problems %q, want one saying %q", all, c.want)
			}
		})
	}
}

// TestREADMETableAwaitingRerun: a table marked as awaiting a rerun is not
// held to the printer's header, but its rows still are to its own.
func TestREADMETableAwaitingRerun(t *testing.T) {
	printer := printedTable{header: "route  runs  p95_ms  slow", columns: 4}
	intro := "(`slowlab reproduce slow-client`, printed before `runs`; " + awaitingMark + "):"
	block := "route   p95_ms  slow\ndirect  5966.5     2\nproxy      1.4     0\n"
	tb, ok, err := readmeTable(fencedBlocks(intro + "\n```\n" + block + "```\n")[0])
	if err != nil || !ok {
		t.Fatalf("no table found: %v", err)
	}
	problems, note := tableProblems(tb, printer)
	if len(problems) > 0 || !strings.Contains(note, "missing runs") {
		t.Errorf("awaiting a rerun: problems %q, note %q; want none and a note that runs is missing", problems, note)
	}
	tb.rows[1].text = "proxy     1.4      0"
	if problems, _ := tableProblems(tb, printer); len(problems) == 0 {
		t.Error("awaiting a rerun, a shifted row passed")
	}
}

// TestREADMEBlocksThatAreNoTable: command lists, text no slowlab command
// introduces and printed text without a table are not checked; a command
// naming no registered experiment is an error.
func TestREADMEBlocksThatAreNoTable(t *testing.T) {
	for _, text := range []string{
		"```\nslowlab reproduce latency-gap --delay 25ms   # 50 s\n```\n",
		"`scripts/bench-exporter.sh` (27 s):\n```\nprocs  exporter  median_ms\n50      x         7.0\n```\n",
		"`slowlab loadgen` against NGINX:\n```\nrate  mode  client\n1000  new   slowlab\n```\n",
		"(`slowlab reproduce long-poll --reps 16`) prints:\n```\nover the repetitions:\n  gthread-2x16 hold 20 probes 20: 16 runs\n```\n",
	} {
		if _, ok, err := readmeTable(fencedBlocks(text)[0]); ok || err != nil {
			t.Errorf("%q: taken for a table (err %v)", text, err)
		}
	}
	_, _, err := readmeTable(fencedBlocks("`slowlab reproduce no-such`:\n```\na  b  c\n1  2  3\n```\n")[0])
	if err == nil || !strings.Contains(err.Error(), "no-such") {
		t.Errorf("an unknown experiment: err %v, want one naming it", err)
	}
}

// TestREADMESecondTableChecked: a block showing two tables (latency-gap's
// requests, then its page loads) holds each to the printer's table of the
// same header; a corrupted second table is caught, the legend text under
// a table is not taken for one, and a printer's second table is found.
func TestREADMESecondTableChecked(t *testing.T) {
	first := "route   slow  p95_ms\ndirect     2  5966.5\n"
	second := "load    loads  load_ms  conns\npage-10    20    330.9      8\n"
	legend := "the load's time, from the document's first byte to the last one,\nin ms (a table of the path's bounds).\n"
	var lines []numberedLine
	for i, l := range strings.Split(first+"\n"+second+"\n"+legend, "\n") {
		lines = append(lines, numberedLine{i + 1, l})
	}
	var printers []printedTable
	for _, st := range splitTables(lines) {
		printers = append(printers, printedTable{header: st.header.text, columns: len(strings.Fields(st.rows[0].text))})
	}
	if len(printers) != 2 || !strings.HasPrefix(printers[1].header, "load ") {
		t.Fatalf("tables found: %+v, want route's and load's, the legend none", printers)
	}
	cases := []struct {
		name, block, want string
	}{
		{"intact", first + "\n" + second + "\n" + legend, ""},
		{"second table's column missing", first + "\n" + strings.Replace(second, "  load_ms", "", 1) + "\n", "missing load_ms"},
		{"second table's row shifted", first + "\n" + strings.Replace(second, "    330.9", "   330.9 ", 1) + "\n", "neither starts nor ends"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := "`slowlab reproduce slow-client`:\n\n```\n" + c.block + "```\n"
			tables, err := readmeTables(fencedBlocks(text)[0])
			if err != nil || len(tables) != 2 {
				t.Fatalf("%d tables (%v), want 2", len(tables), err)
			}
			var all []string
			for i, tb := range tables {
				problems, _ := tableProblems(tb, samePrinted(printers, tb.header, i))
				all = append(all, problems...)
			}
			switch got := strings.Join(all, "\n"); {
			case c.want == "" && got != "":
				t.Errorf("intact tables: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("problems %q, want one saying %q", got, c.want)
			}
		})
	}
}
