package recorder

import "math"

// Maybe is an optional number. When Valid is false the value was not
// measured and is written as an empty CSV cell; recorder never turns a
// missing value into 0. The zero value is None.
type Maybe struct {
	Value float64
	Valid bool
}

// Some returns a valid Maybe holding v. NaN and ±Inf are not measurements,
// so Some returns None for them.
func Some(v float64) Maybe {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Maybe{}
	}
	return Maybe{Value: v, Valid: true}
}

// None returns an invalid Maybe, the same as the zero value.
func None() Maybe { return Maybe{} }

// AppendValid appends m's value to vs when m was measured.
func AppendValid(vs []float64, m Maybe) []float64 {
	if m.Valid {
		return append(vs, m.Value)
	}
	return vs
}
