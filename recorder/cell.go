package recorder

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// pow10 scales a value so that rounding keeps the column's decimals.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6}

// appendFixed appends v rounded to decimals digits after the point, in the
// shortest form that reads back as the same float64. ok is false for NaN and
// ±Inf, which are written as an empty cell.
func appendFixed(b []byte, v float64, decimals int) (_ []byte, ok bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return b, false
	}
	scale := pow10[decimals]
	// Beyond 2^52/scale a float64 has no digits left to round away, and
	// v*scale could lose integer precision.
	if math.Abs(v) < (1<<52)/scale {
		v = math.Round(v*scale) / scale
	}
	if v == 0 {
		v = 0 // never write "-0"
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64), true
}

// span locates a number cell inside encoder.buf.
type span struct{ cell, start, end int }

// encoder turns rows into CSV records. Numbers are formatted into one
// buffer that becomes a single string per row, so a row costs one
// allocation however many columns it has.
type encoder struct {
	buf    []byte
	spans  []span
	record []string
}

// encode returns the record for row; it is valid until the next call.
func encode[T any](e *encoder, cols []Column[T], row *T) []string {
	if cap(e.record) < len(cols) {
		e.record = make([]string, len(cols))
	}
	e.record = e.record[:len(cols)]
	e.buf, e.spans = e.buf[:0], e.spans[:0]
	for i, c := range cols {
		start := len(e.buf)
		ok := true
		switch p := c.field(row).(type) {
		case *string:
			e.record[i] = cleanString(*p)
			continue
		case *int:
			e.buf = strconv.AppendInt(e.buf, int64(*p), 10)
		case *int64:
			e.buf = strconv.AppendInt(e.buf, *p, 10)
		case *float64:
			e.buf, ok = appendFixed(e.buf, *p, c.decimals)
		case *Maybe:
			if p.Valid {
				e.buf, ok = appendFixed(e.buf, p.Value, c.decimals)
			} else {
				ok = false
			}
		case *bool:
			e.buf = strconv.AppendBool(e.buf, *p)
		case *time.Time:
			if p.IsZero() {
				ok = false
			} else {
				e.buf = p.UTC().AppendFormat(e.buf, time.RFC3339Nano)
			}
		default:
			panic(fmt.Sprintf("recorder: column %s has unsupported field type %T", c.name, p))
		}
		if !ok {
			e.record[i] = ""
			continue
		}
		e.spans = append(e.spans, span{i, start, len(e.buf)})
	}
	s := string(e.buf)
	for _, sp := range e.spans {
		e.record[sp.cell] = s[sp.start:sp.end]
	}
	return e.record
}

// cleanString makes s survive a CSV round trip: encoding/csv reads a CRLF
// inside a quoted field back as LF, so write it as LF in the first place.
func cleanString(s string) string {
	for strings.Contains(s, "\r\n") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// Errors a cell can fail with; CellError wraps one of them.
var (
	ErrNotInteger = errors.New("want an integer")
	ErrNotNumber  = errors.New("want a finite decimal number")
	ErrNotBool    = errors.New(`want "true" or "false"`)
	ErrNotTime    = errors.New("want an RFC 3339 time")
)

// CellError is a CSV cell that does not parse as its column's type.
type CellError struct {
	File   string // schema file name, such as "requests.csv"
	Line   int    // 1-based line of the cell in the input
	Column int    // 1-based column number
	Name   string // column name from the header
	Value  string
	Err    error
}

func (e *CellError) Error() string {
	return fmt.Sprintf("%s line %d, column %d (%s): %q: %v", e.File, e.Line, e.Column, e.Name, e.Value, e.Err)
}

func (e *CellError) Unwrap() error { return e.Err }

// decodeCell parses s into the field p points to. Empty cells are None for
// Maybe, NaN for float64, the zero time for time.Time, and "" for strings;
// integers and booleans must be present.
func decodeCell(p any, s string) error {
	switch p := p.(type) {
	case *string:
		*p = s
	case *int:
		v, err := strconv.ParseInt(s, 10, strconv.IntSize)
		if err != nil {
			return numErr(ErrNotInteger, err)
		}
		*p = int(v)
	case *int64:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return numErr(ErrNotInteger, err)
		}
		*p = v
	case *float64:
		if s == "" {
			*p = math.NaN()
			return nil
		}
		v, err := parseFinite(s)
		if err != nil {
			return err
		}
		*p = v
	case *Maybe:
		var v float64 // "" reads as NaN, which Some makes None
		if err := decodeCell(&v, s); err != nil {
			return err
		}
		*p = Some(v)
	case *bool:
		switch s {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return ErrNotBool
		}
	case *time.Time:
		if s == "" {
			*p = time.Time{}
			return nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return ErrNotTime
		}
		// An offset can move a time out of the years RFC 3339 can spell,
		// and then it could not be written back.
		if t = t.UTC(); t.Year() < 0 || t.Year() > 9999 {
			return fmt.Errorf("%w: year %d in UTC", ErrNotTime, t.Year())
		}
		*p = t
	default:
		panic(fmt.Sprintf("recorder: unsupported field type %T", p))
	}
	return nil
}

// parseFinite accepts what appendFixed writes and any other finite
// decimal; NaN and Inf are spelled as empty cells in this contract.
func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, numErr(ErrNotNumber, err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, ErrNotNumber
	}
	return v, nil
}

// numErr keeps strconv's reason (syntax or range) without repeating the
// value, which CellError already quotes.
func numErr(kind, err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", kind, ne.Err)
	}
	return fmt.Errorf("%w: %w", kind, err)
}
