package report

import (
	"math"
	"strconv"

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
