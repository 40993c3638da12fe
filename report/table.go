package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slowlab/slowlab/recorder"
)

// table is a table of the report.
type table struct {
	Details string // when set, the table is folded under this summary
	Caption string
	Head    []string
	// TextHead is the header the CLI prints for the same declaration
	// (Table.WriteText: Head without the HTMLCol columns), as the page's
	// data-text-head attribute, so a test can match the two.
	TextHead string
	Rows     [][]Cell
}

// Cell is one table cell. Num right-aligns it; Title explains it on hover.
type Cell struct {
	Text, Title string
	Num         bool
	missing     bool // not measured: "–" in HTML, "-" as text
}

// Text is a cell of text, left-aligned.
func Text(s string) Cell { return Cell{Text: s} }

// notMeasured is the cell of a value that is missing: never shown as 0.
var notMeasured = Cell{Text: "–", Title: "not measured", Num: true, missing: true}

// Fixed formats v with decimals digits; NaN is not measured.
func Fixed(v float64, decimals int) Cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return notMeasured
	}
	return Cell{Text: strconv.FormatFloat(v, 'f', decimals, 64), Num: true}
}

// Int is a count.
func Int(v int) Cell { return Cell{Text: strconv.Itoa(v), Num: true} }

// Sig formats a latency in milliseconds, or any other quantity, with
// three significant digits (three decimals below 1).
func Sig(v float64) Cell {
	switch a := math.Abs(v); {
	case a >= 100:
		return Fixed(v, 0)
	case a >= 10:
		return Fixed(v, 1)
	case a >= 1:
		return Fixed(v, 2)
	default:
		return Fixed(v, 3)
	}
}

// Opt formats a recorder.Maybe with f, or as not measured.
func Opt(m recorder.Maybe, f func(float64) Cell) Cell {
	if !m.Valid {
		return notMeasured
	}
	return f(m.Value)
}

// Decimals is Fixed with decimals digits, as a formatter for Opt.
func Decimals(decimals int) func(float64) Cell {
	return func(v float64) Cell { return Fixed(v, decimals) }
}

// ByteSize writes a byte count as the experiments name sizes: 1 KiB,
// 100 KiB, 16 MiB, 1 kB, 512 B.
func ByteSize(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1024 && b%1024 == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	case b >= 1000 && b%1000 == 0:
		return fmt.Sprintf("%d kB", b/1000)
	}
	return fmt.Sprintf("%d B", b)
}

// Column is one column of a Table: its header and its cell of a row.
type Column[R any] struct {
	Head     string
	Cell     func(*R) Cell
	htmlOnly bool // drawn in the report, left out of the text
}

// Col is the column headed head whose cell of a row is cell's.
func Col[R any](head string, cell func(*R) Cell) Column[R] { return Column[R]{Head: head, Cell: cell} }

// HTMLCol is a column the report draws and WriteText leaves out: detail
// the CLI's text has no room for, or prints elsewhere (above the rows).
func HTMLCol[R any](head string, cell func(*R) Cell) Column[R] {
	return Column[R]{Head: head, Cell: cell, htmlOnly: true}
}

// Table is a table declared once: its columns, and what it says beside
// them. The CLI prints it as text (WriteText), the report draws it as HTML
// (Part.AddTable), both from this declaration, so their headers and cells
// are the same.
type Table[R any] struct {
	Caption string   // the HTML caption: what the table shows
	Legend  []string // lines printed below the text, added to the caption
	Details string   // when set, the report folds the table under this summary
	Cols    []Column[R]
}

// Head is the table's header row.
func (t *Table[R]) Head() []string {
	h := make([]string, len(t.Cols))
	for i, c := range t.Cols {
		h[i] = c.Head
	}
	return h
}

func (t *Table[R]) cells(rows []R) [][]Cell {
	out := make([][]Cell, len(rows))
	for i := range rows {
		out[i] = make([]Cell, len(t.Cols))
		for j, c := range t.Cols {
			out[i][j] = c.Cell(&rows[i])
		}
	}
	return out
}

// html is the table of rows for the report page.
func (t *Table[R]) html(rows []R) *table {
	caption := strings.Join(append([]string{t.Caption}, t.Legend...), " ")
	return &table{Details: t.Details, Caption: caption, Head: t.Head(), TextHead: strings.Join(t.TextHead(), " "), Rows: t.cells(rows)}
}

// TextHead is the header WriteText prints: Head without the HTMLCol
// columns.
func (t *Table[R]) TextHead() []string { return t.text().Head() }

// text is t without its HTMLCol columns, as WriteText prints it.
func (t *Table[R]) text() *Table[R] {
	text := *t
	text.Cols = slices.DeleteFunc(slices.Clone(t.Cols), func(c Column[R]) bool { return c.htmlOnly })
	return &text
}

// WriteText writes rows as aligned text, text cells left-aligned and
// numbers right-aligned, a value not measured as "-", then the legend;
// the HTMLCol columns are left out.
func (t *Table[R]) WriteText(w io.Writer, rows []R) {
	t = t.text()
	lines := [][]string{t.Head()}
	num := make([]bool, len(t.Cols))
	for _, r := range t.cells(rows) {
		vals := make([]string, len(r))
		for j, c := range r {
			vals[j], num[j] = c.String(), num[j] || c.Num
		}
		lines = append(lines, vals)
	}
	width := make([]int, len(t.Cols)) // in runes, as fmt pads
	for _, l := range lines {
		for j, v := range l {
			width[j] = max(width[j], utf8.RuneCountInString(v))
		}
	}
	for _, l := range lines {
		var b strings.Builder
		for j, v := range l {
			if j > 0 {
				b.WriteByte(' ')
			}
			if num[j] {
				fmt.Fprintf(&b, "%*s", width[j], v)
			} else {
				fmt.Fprintf(&b, "%-*s", width[j], v)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	for _, l := range t.Legend {
		fmt.Fprintln(w, l)
	}
}

// FastCols are a conditions table's /fast columns, from the FastOver of
// each row: fast_ok (ok of planned), fast_p50_ms and fast_p95_ms.
func FastCols[R any](of func(*R) *recorder.FastOver) []Column[R] {
	return []Column[R]{
		Col("fast_ok", func(r *R) Cell {
			f := of(r)
			return Cell{Text: strconv.Itoa(f.FastOK) + "/" + strconv.Itoa(f.FastPlanned), Num: true}
		}),
		Col("fast_p50_ms", func(r *R) Cell { return Opt(of(r).P50MS, Decimals(1)) }),
		Col("fast_p95_ms", func(r *R) Cell { return Opt(of(r).P95MS, Decimals(1)) }),
	}
}

// String is the cell as the CLI prints it: its text, "-" when not
// measured.
func (c Cell) String() string {
	if c.missing {
		return "-"
	}
	return c.Text
}
