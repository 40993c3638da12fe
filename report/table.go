package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// table is a table of the report.
type table struct {
	Details string // when set, the table is folded under this summary
	Caption string
	Head    []string
	Rows    [][]cell
}

// cell is one table cell. Num right-aligns it; Title explains it on hover.
type cell struct {
	Text, Title string
	Num         bool
}

func text(s string) cell { return cell{Text: s} }

// notMeasured is the cell of a value that is missing: never shown as 0.
var notMeasured = cell{Text: "–", Title: "not measured", Num: true}

// num formats v with decimals digits; NaN is not measured.
func num(v float64, decimals int) cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return notMeasured
	}
	return cell{Text: strconv.FormatFloat(v, 'f', decimals, 64), Num: true}
}

func integer(v int) cell { return cell{Text: strconv.Itoa(v), Num: true} }

// ms formats a latency in milliseconds, or any other quantity, with
// three significant digits (three decimals below 1).
func ms(v float64) cell {
	switch a := math.Abs(v); {
	case a >= 100:
		return num(v, 0)
	case a >= 10:
		return num(v, 1)
	case a >= 1:
		return num(v, 2)
	default:
		return num(v, 3)
	}
}

// maybe formats a recorder.Maybe with f, or as not measured.
func maybe(m recorder.Maybe, f func(float64) cell) cell {
	if !m.Valid {
		return notMeasured
	}
	return f(m.Value)
}

func seconds(v float64) cell { return num(v, 3) }
func mib(v float64) cell     { return num(v, 1) }

// csvColumn is one column of a results table that recorder does not own
// yet: its header name and how a cell sets the row.
type csvColumn[T any] struct {
	name string
	set  func(row *T, cell string) error
}

// Errors a cell of groups.csv or gap.csv fails with.
var (
	errNotInteger = errors.New("want an integer")
	errNotNumber  = errors.New("want a finite decimal number or an empty cell")
)

func strCol[T any](name string, f func(*T) *string) csvColumn[T] {
	return csvColumn[T]{name, func(r *T, s string) error { *f(r) = s; return nil }}
}

func intCol[T any](name string, f func(*T) *int) csvColumn[T] {
	return csvColumn[T]{name, func(r *T, s string) error {
		v, err := strconv.Atoi(s)
		if err != nil {
			return errNotInteger
		}
		*f(r) = v
		return nil
	}}
}

// numCol reads a decimal; an empty cell was not measured and reads as NaN.
func numCol[T any](name string, f func(*T) *float64) csvColumn[T] {
	return csvColumn[T]{name, func(r *T, s string) error {
		if s == "" {
			*f(r) = math.NaN()
			return nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return errNotNumber
		}
		*f(r) = v
		return nil
	}}
}

// readCSV reads the file at path, whose header must be exactly the names
// of cols, into rows. Errors name the file, and for a bad cell its line,
// column and value.
func readCSV[T any](path string, cols []csvColumn[T]) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	rows, err := parseCSV(f, cols)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}

func parseCSV[T any](r io.Reader, cols []csvColumn[T]) ([]T, error) {
	want := make([]string, len(cols))
	for i, c := range cols {
		want[i] = c.name
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty file: want the header " + strings.Join(want, ","))
	}
	if err != nil {
		return nil, err
	}
	if strings.Join(header, ",") != strings.Join(want, ",") {
		return nil, fmt.Errorf("header is %q, want %q", strings.Join(header, ","), strings.Join(want, ","))
	}
	cr.FieldsPerRecord = len(cols)
	var rows []T
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		var row T
		for i, c := range cols {
			if err := c.set(&row, rec[i]); err != nil {
				line, _ := cr.FieldPos(i)
				return nil, fmt.Errorf("line %d, column %d (%s): %q: %w", line, i+1, c.name, rec[i], err)
			}
		}
		rows = append(rows, row)
	}
}
