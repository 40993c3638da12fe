package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// FiguresDir is the folder under the results directory that holds the
// figure files.
const FiguresDir = "figures"

// HTMLFile is the name of the report written into the results directory.
const HTMLFile = "report.html"

// ErrNoResults is returned (wrapped) by Write when the directory holds no
// file that any experiment's report reads.
var ErrNoResults = errors.New("no results files")

// Report is what Write produced.
type Report struct {
	Dir         string   // the results directory
	HTML        string   // path of report.html
	Experiments []string // sections in the report, by their experiments' names
	Figures     []Figure
	Notes       []string // what was left out and why
}

// Figure is one figure, written as PNG and SVG.
type Figure struct {
	Name    string   // file name without extension, such as "fast-p95"
	Title   string   // what the figure shows
	Caption string   // which statistic is drawn and what was left out
	Files   []string // slash-separated paths relative to Report.Dir
	Series  int      // data series drawn, over all panels
	Panels  int      // stacked plots sharing the time axis, 1 for most figures
	Points  []int    // points (or bars) per series, in drawing order
	Axes    []Axes   // each panel's title and axis labels, top first
}

// Axes is what one panel of a figure says it shows: its title and the
// labels of its axes (reporttest.Check wants all three).
type Axes struct{ Title, X, Y string }

// Section renders one experiment's results into its part of the report.
// Each is defined in its experiment's package (NewSection) and carried by
// that experiment's registration in lab, which gives the set of sections
// and their order.
type Section struct {
	Name string // the experiment's, as in environment.json's "experiment"
	// Marker is the results file whose presence says the directory holds
	// this experiment's results.
	Marker string
	build  func(dir string) (*section, error)
}

// NewSection is the section of experiment name, drawn when the results
// directory holds marker: build reads the directory and fills a Part.
// It is how a package other than report (an experiment's own) declares
// its section.
func NewSection(name, marker string, build func(dir string) (*Part, error)) Section {
	return Section{Name: name, Marker: marker, build: func(dir string) (*section, error) {
		p, err := build(dir)
		if err != nil {
			return nil, err
		}
		return &p.s, nil
	}}
}

// Part is one experiment's part of the report as its package builds it:
// a title, an introduction, then tables, figures and notes in order.
type Part struct{ s section }

// NewPart is a part titled title (also its anchor) introduced by intro.
func NewPart(title, intro string) *Part {
	return &Part{section{id: title, title: title, intro: intro}}
}

// AddTable adds rows as t declares them.
func AddTable[R any](p *Part, t *Table[R], rows []R) { p.s.addTable(t.html(rows)) }

// AddFoldedTable adds rows as t declares them, folded under summary.
func AddFoldedTable[R any](p *Part, t *Table[R], rows []R, summary string) {
	h := t.html(rows)
	h.Details = summary
	p.s.addTable(h)
}

// Skip records that something was left out of the part, in the report
// and in Report.Notes.
func (p *Part) Skip(format string, args ...any) { p.s.skip(format, args...) }

// section is one experiment's part of the report.
type section struct {
	id, title string
	intro     string
	blocks    []block
	notes     []string
}

// block is one item of a section: exactly one of figure, table and note
// is set.
type block struct {
	figure *figure
	table  *table
	note   string
}

func (s *section) addFigure(f *figure) { s.blocks = append(s.blocks, block{figure: f}) }
func (s *section) addTable(t *table)   { s.blocks = append(s.blocks, block{table: t}) }

// addIf adds f unless it is nil, and says whether it did.
func (s *section) addIf(f *figure) bool {
	if f != nil {
		s.addFigure(f)
	}
	return f != nil
}

// skip records that something was left out of the section, in the report
// and in Report.Notes.
func (s *section) skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.notes = append(s.notes, msg)
	s.blocks = append(s.blocks, block{note: msg})
}

// Write reads the results directory dir and writes dir/figures/*.png and
// *.svg and dir/report.html, replacing earlier ones, with the sections of
// experiments (in their order) whose results are in dir. An experiment's
// optional files that are missing leave their figures out, with a note; a
// file that is present but does not parse is an error naming it.
func Write(dir string, experiments []Section) (*Report, error) {
	for _, e := range experiments {
		if e.build == nil {
			return nil, fmt.Errorf("report section %q: not one of report's sections", e.Name)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("results directory %s: not a directory", dir)
	}
	sessions, err := readEnvironment(dir)
	if err != nil {
		return nil, err
	}
	what, err := whatResults(dir, sessions)
	if err != nil {
		return nil, err
	}

	rep := &Report{Dir: dir, HTML: filepath.Join(dir, HTMLFile)}
	var sections []*section
	for _, e := range selectExperiments(dir, experiments, what) {
		s, err := e.build(dir)
		if err != nil {
			return nil, err
		}
		rep.Experiments = append(rep.Experiments, e.Name)
		sections = append(sections, s)
	}
	if len(sections) == 0 {
		var markers []string
		for _, e := range experiments {
			if !slices.Contains(markers, e.Marker) { // experiments may share theirs
				markers = append(markers, e.Marker)
			}
		}
		return nil, fmt.Errorf("%s: %w: none of %s is present", dir, ErrNoResults, strings.Join(markers, ", "))
	}

	if err := os.MkdirAll(filepath.Join(dir, FiguresDir), 0o755); err != nil {
		return nil, fmt.Errorf("create figures directory: %w", err)
	}
	page := page{Dir: dir}
	if len(sessions) > 0 {
		page.Env = environmentTable(sessions)
	} else {
		rep.Notes = append(rep.Notes, EnvironmentFile+" is not present: no environment summary")
	}
	for _, s := range sections {
		hs := htmlSection{ID: s.id, Title: s.title, Intro: s.intro}
		for _, b := range s.blocks {
			hb := htmlBlock{Table: b.table, Note: b.note}
			if b.figure != nil {
				fig, err := b.figure.write(dir)
				if err != nil {
					return nil, err
				}
				rep.Figures = append(rep.Figures, fig)
				hb.Figure = newHTMLFigure(len(rep.Figures), fig, b.figure)
			}
			hs.Blocks = append(hs.Blocks, hb)
		}
		page.Sections = append(page.Sections, hs)
		rep.Notes = append(rep.Notes, s.notes...)
	}
	if err := writeHTML(rep.HTML, &page); err != nil {
		return nil, err
	}
	return rep, nil
}

// whatResults is what dir's results are of, as the first session of
// environment.json names it, else manifest.json ("" when neither does).
// A manifest.json that cannot be read is an error.
func whatResults(dir string, sessions []recorder.Environment) (string, error) {
	m, err := recorder.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if len(sessions) > 0 {
		return sessions[0].Experiment, nil
	}
	return m.Experiment, nil
}

// selectExperiments returns the experiments to report on: the one named
// what (whatResults) when it is a known one and its results file is
// present, else every experiment whose results file is present.
func selectExperiments(dir string, experiments []Section, what string) []Section {
	var found []Section
	for _, e := range experiments {
		if _, err := os.Stat(filepath.Join(dir, e.Marker)); err != nil {
			continue
		}
		if what != "" && what == e.Name {
			return []Section{e}
		}
		found = append(found, e)
	}
	return found
}
