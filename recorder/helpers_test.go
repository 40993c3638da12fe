package recorder

import (
	"fmt"
	"math"
	"reflect"
)

// diffRows describes the first row where got differs from want, or
// returns "": for rows built in memory (no CSV precision between them),
// equal means equal in every field. Rows read back from a file are
// compared up to each column's precision by recordertest.DiffRows, in
// the package's external tests.
func diffRows[T any](want, got []T) string {
	if len(want) != len(got) {
		return fmt.Sprintf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			return fmt.Sprintf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	return ""
}

// nearMaybe reports whether got is want to a millionth (half a step at
// six decimals), both being None or both measured.
func nearMaybe(want, got Maybe) bool {
	if !want.Valid || !got.Valid {
		return want.Valid == got.Valid
	}
	return math.Abs(want.Value-got.Value) <= 0.5e-6+4e-16*math.Abs(want.Value)
}

// showMaybe is m as a test message names it: None or Some(value).
func showMaybe(m Maybe) string {
	if !m.Valid {
		return "None"
	}
	return fmt.Sprintf("Some(%v)", m.Value)
}
