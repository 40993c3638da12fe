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
	build  func(dir string) (*Part, error)
}

// NewSection is the section of experiment name, drawn when the results
// directory holds marker: build reads the directory and fills a Part.
// It is how a package other than report (an experiment's own) declares
// its section.
func NewSection(name, marker string, build func(dir string) (*Part, error)) Section {
	return Section{Name: name, Marker: marker, build: build}
}

// Part is one experiment's part of the report as its package builds it:
// a title, an introduction, then tables, figures and notes in order.
type Part struct{ s section }

// NewPart is a part titled title (also its anchor) introduced by intro.
func NewPart(title, intro string) *Part {
	return &Part{section{ID: title, Title: title, Intro: intro}}
}

// AddTable adds rows as t declares them.
func AddTable[R any](p *Part, t *Table[R], rows []R) { p.add(block{Table: t.html(rows)}) }

// AddFoldedTable adds rows as t declares them, folded under summary.
func AddFoldedTable[R any](p *Part, t *Table[R], rows []R, summary string) {
	h := t.html(rows)
	h.Details = summary
	p.add(block{Table: h})
}

// Skip records that something was left out of the part, in the report
// and in Report.Notes.
func (p *Part) Skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.s.notes = append(p.s.notes, msg)
	p.add(block{Note: msg})
}

// section is one experiment's part of the report, as report.html shows it.
type section struct {
	ID, Title, Intro string
	Blocks           []block
	notes            []string // what Skip left out, for Report.Notes
}

// block is one item of a section: exactly one of fig, Table and Note is
// set; Figure is fig once written.
type block struct {
	fig    *figure
	Figure *htmlFigure
	Table  *table
	Note   string
}

func (p *Part) add(b block) { p.s.Blocks = append(p.s.Blocks, b) }

// addIf adds f unless it is nil, and says whether it did.
func (p *Part) addIf(f *figure) bool {
	if f != nil {
		p.add(block{fig: f})
	}
	return f != nil
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
	sessions, err := recorder.ReadEnvironment(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// What dir's results are of: as the first session names it, else
	// manifest.json ("" when neither does).
	m, err := recorder.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	what := m.Experiment
	if len(sessions) > 0 {
		what = sessions[0].Experiment
	}

	rep := &Report{Dir: dir, HTML: filepath.Join(dir, HTMLFile)}
	page := page{Dir: dir}
	for _, e := range selectExperiments(dir, experiments, what) {
		p, err := e.build(dir)
		if err != nil {
			return nil, err
		}
		rep.Experiments = append(rep.Experiments, e.Name)
		page.Sections = append(page.Sections, &p.s)
	}
	if len(page.Sections) == 0 {
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
	if len(sessions) > 0 {
		page.Env = environmentTable(sessions)
	} else if page.EnvNote = envMissing(m); page.EnvNote != "" {
		rep.Notes = append(rep.Notes, page.EnvNote)
	}
	for _, s := range page.Sections {
		for i, b := range s.Blocks {
			if b.fig == nil {
				continue
			}
			fig, err := b.fig.write(dir)
			if err != nil {
				return nil, err
			}
			rep.Figures = append(rep.Figures, fig)
			s.Blocks[i].Figure = newHTMLFigure(len(rep.Figures), fig, b.fig)
		}
		rep.Notes = append(rep.Notes, s.notes...)
	}
	if err := writeHTML(rep.HTML, &page); err != nil {
		return nil, err
	}
	return rep, nil
}

// selectExperiments returns the experiments to report on: the one named
// what when it is a known one and its results file is
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

// envMissing is the note for a directory without environment.json: due
// where a lab session's would hold one, "" where its manifest lists the
// files of a command that keeps none (slowlab loadgen --out, slowlab
// merge: manifest.json without environment.json).
func envMissing(m recorder.Manifest) string {
	if m.Files != nil && !slices.ContainsFunc(m.Files, func(f recorder.ManifestEntry) bool { return f.Name == EnvironmentFile }) {
		return ""
	}
	return EnvironmentFile + " is not present: no environment summary"
}
