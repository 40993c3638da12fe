package recordertest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// The row contract's checks, for any row type: random rows on each
// column's grid, comparison up to a column's precision, a write/read round
// trip, the coverage of a row's fields by its columns, seeds for a
// reader's fuzzer and the layout a test pins. They read a row type's
// columns through recorder.Schema's Columns.

// columns returns row type T's columns, in order.
func columns[T recorder.Row[T]]() []recorder.Column[T] {
	var zero T
	return zero.Schema().Columns()
}

// pow10[d] is the step of a column with d decimals, inverted.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6}

// cleanString is what recorder's writer does to a string cell: a CRLF
// inside a quoted field reads back as LF, so it is written as LF.
func cleanString(s string) string {
	for strings.Contains(s, "\r\n") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// awkward are strings that stress CSV quoting.
var awkward = []string{
	"", "direct", "sync-2", "gthread-1x4", "proxy-buffering-on",
	"a,b", `say "hi"`, `"`, `""`, " leading space", "trailing space ",
	"line\nbreak", "lone\rcarriage", "tab\there", "ünïcödé ✓", "#comment", `\.`,
	"dial tcp 127.0.0.1:8000: connect: connection refused",
}

// randomString returns one of the awkward strings or a random mix of their
// runes and arbitrary bytes (including invalid UTF-8).
func randomString(rng *rand.Rand, nonEmpty bool) string {
	if rng.IntN(3) == 0 {
		s := awkward[rng.IntN(len(awkward))]
		if s != "" || !nonEmpty {
			return s
		}
	}
	var b strings.Builder
	n := rng.IntN(12)
	if nonEmpty {
		n++
	}
	for range n {
		if rng.IntN(8) == 0 {
			b.WriteByte(byte(rng.IntN(256)))
			continue
		}
		pool := awkward[rng.IntN(len(awkward))]
		if pool == "" {
			pool = "x"
		}
		r := []rune(pool)
		b.WriteRune(r[rng.IntN(len(r))])
	}
	s := cleanString(b.String())
	if nonEmpty && s == "" {
		s = "x"
	}
	return s
}

// gridValue returns a float64 that is exactly representable at decimals
// digits after the point, so a write/read round trip must return it as is.
func gridValue(rng *rand.Rand, decimals int, nonZero bool) float64 {
	var k int64
	switch rng.IntN(4) {
	case 0:
		k = rng.Int64N(2000) - 1000 // small, often 0 or negative
	case 1:
		k = rng.Int64N(1 << 40) // large
	default:
		k = rng.Int64N(100_000_000) // typical ms/s/bytes
	}
	if nonZero && k == 0 {
		k = 1
	}
	return float64(k) / pow10[decimals]
}

// RandomRow fills every column of a T with a random value on the column's
// grid. With nonZero, no field is left at its zero value.
func RandomRow[T recorder.Row[T]](rng *rand.Rand, nonZero bool) T {
	var row T
	for _, c := range columns[T]() {
		switch p := c.Field(&row).(type) {
		case *string:
			*p = randomString(rng, nonZero)
		case *int:
			*p = int(rng.Int64N(2_000_000) - 1_000_000)
			switch rng.IntN(20) {
			case 0:
				*p = math.MinInt
			case 1:
				*p = math.MaxInt
			}
			if nonZero && *p == 0 {
				*p = 7
			}
		case *int64:
			*p = rng.Int64()
			if nonZero && *p == 0 {
				*p = 7
			}
		case *float64:
			*p = gridValue(rng, c.Decimals(), nonZero)
			if !nonZero && rng.IntN(10) == 0 {
				*p = math.NaN() // written as "", read back as NaN
			}
		case *recorder.Maybe:
			if nonZero || rng.IntN(4) != 0 {
				*p = recorder.Some(gridValue(rng, c.Decimals(), nonZero))
			} else {
				*p = recorder.None()
			}
		case *bool:
			*p = nonZero || rng.IntN(2) == 0
		case *time.Time:
			if nonZero || rng.IntN(5) != 0 {
				*p = time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1e9)).UTC()
			} else {
				*p = time.Time{}
			}
		default:
			panic(fmt.Sprintf("RandomRow: unsupported field type %T", p))
		}
	}
	return row
}

// DiffRows describes the first difference between want and got, or
// returns "". Floats may differ by tol grid steps (0 means exactly, with NaN
// equal to NaN); strings are compared after cleanString.
func DiffRows[T recorder.Row[T]](want, got []T, tol float64) string {
	if len(want) != len(got) {
		return fmt.Sprintf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for _, c := range columns[T]() {
			w, g := c.Field(&want[i]), c.Field(&got[i])
			if !sameCell(w, g, c.Decimals(), tol) {
				return fmt.Sprintf("row %d column %s: got %s, want %s", i, c.Name(), show(g), show(w))
			}
		}
	}
	return ""
}

func sameCell(w, g any, decimals int, tol float64) bool {
	switch w := w.(type) {
	case *string:
		return cleanString(*w) == *g.(*string)
	case *int, *int64, *bool:
		return reflect.DeepEqual(w, g)
	case *time.Time:
		return w.Equal(*g.(*time.Time))
	case *float64:
		return sameFloat(*w, *g.(*float64), decimals, tol)
	case *recorder.Maybe:
		g := g.(*recorder.Maybe)
		if !w.Valid || !g.Valid {
			return w.Valid == g.Valid
		}
		return sameFloat(w.Value, g.Value, decimals, tol)
	}
	panic(fmt.Sprintf("sameCell: unsupported field type %T", w))
}

func sameFloat(w, g float64, decimals int, tol float64) bool {
	if math.IsNaN(w) || math.IsNaN(g) {
		return math.IsNaN(w) && math.IsNaN(g)
	}
	// Half a grid step for the rounding, plus the error of scaling by 10^d.
	return math.Abs(w-g) <= tol*(0.5/pow10[decimals]+4e-16*math.Abs(w))
}

func show(p any) string {
	switch p := p.(type) {
	case *string:
		return fmt.Sprintf("%q", *p)
	case *recorder.Maybe:
		if !p.Valid {
			return "None"
		}
		return fmt.Sprintf("Some(%v)", p.Value)
	case *time.Time:
		return p.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(reflect.ValueOf(p).Elem()) // *int, *int64, *float64, *bool
}

// EncodeRows writes rows with a Writer and returns the CSV.
func EncodeRows[T recorder.Row[T]](rows []T) ([]byte, error) {
	var buf bytes.Buffer
	w, err := recorder.NewWriter[T](&buf)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// RoundTripCSV reads data, which must be valid, writes the rows, reads
// them back (equal up to each column's precision) and writes them again
// (the same bytes): the rows read, or what broke.
func RoundTripCSV[T recorder.Row[T]](data []byte) ([]T, error) {
	rows, err := recorder.ReadAll[T](bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("ReadAll: %w", err)
	}
	out, err := EncodeRows(rows)
	if err != nil {
		return nil, err
	}
	again, err := recorder.ReadAll[T](bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("cannot read back what was written: %w\ninput:\n%q\nwritten:\n%q", err, data, out)
	}
	if d := DiffRows(rows, again, 1); d != "" {
		return nil, fmt.Errorf("round trip changed a row: %s\ninput:\n%q\nwritten:\n%q", d, data, out)
	}
	out2, err := EncodeRows(again)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(out, out2) {
		return nil, fmt.Errorf("writing is not a fixed point\nfirst:\n%q\nsecond:\n%q", out, out2)
	}
	return rows, nil
}

// FuzzSeeds returns CSV inputs for T's reader's fuzzer: valid files of
// random rows, the same cut in half and with a separator changed, a
// header alone and a row of empty cells.
func FuzzSeeds[T recorder.Row[T]]() [][]byte {
	rng := rand.New(rand.NewPCG(uint64(len(recorder.FileName[T]())), 1))
	var seeds [][]byte
	for range 3 {
		rows := make([]T, 1+rng.IntN(4))
		for i := range rows {
			rows[i] = RandomRow[T](rng, false)
		}
		b, _ := EncodeRows(rows)
		seeds = append(seeds, b, b[:len(b)/2], bytes.Replace(b, []byte(","), []byte(";"), 1))
		// A killed writer's cuts: in the last row, and of its newline.
		last := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		seeds = append(seeds, b[:last+(len(b)-last)/3], b[:len(b)-2], b[:len(b)-1])
	}
	header := strings.Join(recorder.Header[T](), ",") + "\n"
	return append(seeds, []byte(header), []byte(header+strings.Repeat(",", len(recorder.Header[T]())-1)+"\n"))
}

// CoverageGap guards T's column table against copy-paste slips: "" when
// every field of the row struct has exactly one column, else what is
// wrong.
func CoverageGap[T recorder.Row[T]]() string {
	file, cols := recorder.FileName[T](), columns[T]()
	var zero T
	if n := countLeaves(reflect.TypeOf(zero)); n != len(cols) {
		return fmt.Sprintf("%s: struct has %d fields, schema has %d columns", file, n, len(cols))
	}
	// A row with every column set non-zero has no zero field left only if
	// no two columns share a field.
	row := RandomRow[T](rand.New(rand.NewPCG(1, 2)), true)
	if path := zeroLeaf(reflect.ValueOf(row), reflect.TypeOf(row).Name()); path != "" {
		return fmt.Sprintf("%s: field %s has no column", file, path)
	}
	return ""
}

var (
	maybeType = reflect.TypeFor[recorder.Maybe]()
	timeType  = reflect.TypeFor[time.Time]()
)

func countLeaves(t reflect.Type) int {
	switch {
	case t == maybeType || t == timeType:
		return 1
	case t.Kind() == reflect.Struct:
		n := 0
		for i := range t.NumField() {
			n += countLeaves(t.Field(i).Type)
		}
		return n
	case t.Kind() == reflect.Array:
		return t.Len() * countLeaves(t.Elem())
	}
	return 1
}

func zeroLeaf(v reflect.Value, path string) string {
	switch {
	case v.Type() == maybeType || v.Type() == timeType:
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if p := zeroLeaf(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
		return ""
	case v.Kind() == reflect.Array:
		for i := range v.Len() {
			if p := zeroLeaf(v.Index(i), path+"["+string(rune('0'+i))+"]"); p != "" {
				return p
			}
		}
		return ""
	}
	if v.IsZero() {
		return path
	}
	return ""
}

// Layout is T's columns as "name/decimals", in order: what a test pins
// so that a file's columns keep their names, places and precision.
func Layout[T recorder.Row[T]]() string {
	var parts []string
	for _, c := range columns[T]() {
		parts = append(parts, fmt.Sprintf("%s/%d", c.Name(), c.Decimals()))
	}
	return strings.Join(parts, " ")
}

// AddedColumns is T's columns added after its file's first layout, as
// "name=default", in order: with Layout, what a test pins of a file's
// contract.
func AddedColumns[T recorder.Row[T]]() string {
	var parts []string
	for _, c := range columns[T]() {
		if def, ok := c.Default(); ok {
			parts = append(parts, c.Name()+"="+def)
		}
	}
	return strings.Join(parts, " ")
}
