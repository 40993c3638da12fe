package recorder

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// The field types that are one column each though they are structs.
var (
	maybeType = reflect.TypeFor[Maybe]()
	timeType  = reflect.TypeFor[time.Time]()
)

// Tagged is the layout of file whose columns are T's fields, in order,
// each declaring its column in a csv tag:
//
//	RunID  string  `csv:"run_id"`
//	StartS float64 `csv:"start_s,seconds"`
//	Proto  string  `csv:"protocol,added=h2"`
//
// The first part is the column's name; then, for float64 and Maybe
// fields, the digits kept after the point, by name (seconds, millis,
// micros, mib, milli, whole: the Decimals* constants) or as a digit 0-6;
// added=DEF marks a column added after files were written without it
// (Column.Added). An embedded struct (Holding, FastFields) contributes
// its own tagged fields at its place; a csv tag on it renames some of
// their columns for this row, FROM=TO separated by commas, as a row whose
// clients are uploaders embeds a key with a clients column:
//
//	lab.RunKey `csv:"clients=uploaders"`
//
// A field of another
// type than string, int, int64, float64, Maybe, bool or time.Time, a
// field without a tag, an unknown option or a name used twice panics,
// naming the type and the field: Tagged runs once per type, when its
// package's schema variable is initialized, so a bad tag stops the
// program before any file is written.
func Tagged[T any](file string) *Schema[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("recorder: Tagged[%s]: not a struct", t))
	}
	s := &Schema[T]{file: file}
	tagColumns(s, t, t.Name(), 0, map[string]string{}, nil, nil)
	if len(s.cols) == 0 {
		panic(fmt.Sprintf("recorder: %s (%s) has no columns", t, file))
	}
	return s
}

// TaggedSpans is Tagged for a row whose columns are its tagged fields in
// another order than the struct's, as when an embedded struct's columns
// are split around the row's own (a file that grew): each span is
// "First-Last", the fields from First through Last in the struct's order
// (an embedded struct's fields by their own names), and the spans
// together must take every tagged field once; else it panics naming the
// type and the span.
func TaggedSpans[T any](file string, spans ...string) *Schema[T] {
	all, t := Tagged[T](file), reflect.TypeFor[T]()
	var fields []string
	tagColumns(&Schema[T]{}, t, t.Name(), 0, map[string]string{}, &fields, nil)
	at := func(name, span string) int {
		i := slices.Index(fields, name)
		if i < 0 || slices.Index(fields[i+1:], name) >= 0 {
			panic(fmt.Sprintf("recorder: %s: span %q: no single tagged field %s", t, span, name))
		}
		return i
	}
	s := &Schema[T]{file: file}
	used := make([]bool, len(fields))
	for _, span := range spans {
		first, last, _ := strings.Cut(span, "-")
		i, j := at(first, span), at(cmp.Or(last, first), span)
		if i > j {
			panic(fmt.Sprintf("recorder: %s: span %q: %s comes after %s", t, span, first, last))
		}
		for k := i; k <= j; k++ {
			if used[k] {
				panic(fmt.Sprintf("recorder: %s: span %q takes field %s again", t, span, fields[k]))
			}
			used[k] = true
		}
		s.cols = append(s.cols, all.cols[i:j+1]...)
	}
	if k := slices.Index(used, false); k >= 0 {
		panic(fmt.Sprintf("recorder: %s: field %s is in no span", t, fields[k]))
	}
	return s
}

// decimalsByName are the precisions a csv tag names.
var decimalsByName = map[string]int{
	"seconds": DecimalsSeconds, "millis": DecimalsMillis, "micros": DecimalsMicros,
	"mib": DecimalsMiB, "milli": DecimalsMilli, "whole": DecimalsWhole,
}

// tagColumns appends the columns of the struct type t, found at offset
// within T, to s, and their fields' names to fields if not nil; path
// names t's fields for the panics. renames are the renamings of the
// structs t is embedded in, t's own embedding's last.
func tagColumns[T any](s *Schema[T], t reflect.Type, path string, offset uintptr, seen map[string]string, fields *[]string, renames []renaming) {
	for i := range t.NumField() {
		f := t.Field(i)
		field := path + "." + f.Name
		tag, ok := f.Tag.Lookup("csv")
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Type != maybeType && f.Type != timeType {
			inner := renames
			if ok {
				r, err := parseRenaming(tag)
				if err != nil {
					panic(fmt.Sprintf("recorder: %s: field %s: %v", reflect.TypeFor[T](), field, err))
				}
				inner = append(slices.Clip(renames), r)
			}
			tagColumns(s, f.Type, field, offset+f.Offset, seen, fields, inner)
			if ok {
				if from := inner[len(inner)-1].unused(); from != "" {
					panic(fmt.Sprintf("recorder: %s: field %s: csv tag %q renames column %q, which %s has not", reflect.TypeFor[T](), field, tag, from, f.Type))
				}
			}
			continue
		}
		if !ok {
			panic(fmt.Sprintf("recorder: %s: field %s has no csv tag", reflect.TypeFor[T](), field))
		}
		c, err := tagColumn[T](f.Type, tag, offset+f.Offset)
		if err != nil {
			panic(fmt.Sprintf("recorder: %s: field %s: %v", reflect.TypeFor[T](), field, err))
		}
		for k := len(renames) - 1; k >= 0; k-- {
			c.name = renames[k].of(c.name)
		}
		if other, dup := seen[c.name]; dup {
			panic(fmt.Sprintf("recorder: %s: fields %s and %s are both column %q", reflect.TypeFor[T](), other, field, c.name))
		}
		seen[c.name] = field
		s.cols = append(s.cols, c)
		if fields != nil {
			*fields = append(*fields, f.Name)
		}
	}
}

// renaming is what the csv tag of an embedded struct renames: each
// column FROM of the struct's is column TO of the row (the tag
// "FROM=TO,FROM=TO").
type renaming struct {
	to   map[string]string
	used map[string]bool
}

// parseRenaming reads an embedded struct's csv tag.
func parseRenaming(tag string) (renaming, error) {
	r := renaming{to: map[string]string{}, used: map[string]bool{}}
	for part := range strings.SplitSeq(tag, ",") {
		from, to, ok := strings.Cut(part, "=")
		if !ok || from == "" || to == "" {
			return r, fmt.Errorf("csv tag %q on an embedded struct: %q is not a renaming FROM=TO", tag, part)
		}
		if _, twice := r.to[from]; twice {
			return r, fmt.Errorf("csv tag %q on an embedded struct renames column %q twice", tag, from)
		}
		r.to[from] = to
	}
	return r, nil
}

// of is the name column name takes, noting the renaming used.
func (r renaming) of(name string) string {
	to, ok := r.to[name]
	if !ok {
		return name
	}
	r.used[name] = true
	return to
}

// unused is a column the renaming names that no field had, or "".
func (r renaming) unused() string {
	for _, from := range slices.Sorted(maps.Keys(r.to)) {
		if !r.used[from] {
			return from
		}
	}
	return ""
}

// tagColumn is the column a field of type ft at offset declares with tag.
func tagColumn[T any](ft reflect.Type, tag string, offset uintptr) (Column[T], error) {
	parts := strings.Split(tag, ",")
	c := Column[T]{name: parts[0]}
	if c.name == "" {
		return c, fmt.Errorf("csv tag %q has no column name", tag)
	}
	float := ft == reflect.TypeFor[float64]() || ft == maybeType
	for _, opt := range parts[1:] {
		if def, ok := strings.CutPrefix(opt, "added="); ok {
			c.added, c.def = true, def
			continue
		}
		d, named := decimalsByName[opt]
		if !named {
			n, err := strconv.Atoi(opt)
			if err != nil || n < 0 || n >= len(pow10) {
				return c, fmt.Errorf("csv tag %q: unknown option %q (want a precision such as seconds or 0-%d, or added=DEF)", tag, opt, len(pow10)-1)
			}
			d = n
		}
		if d != 0 && !float {
			return c, fmt.Errorf("csv tag %q: precision %q on a %s field (only float64 and Maybe have one)", tag, opt, ft)
		}
		c.decimals = d
	}
	switch ft {
	case reflect.TypeFor[string]():
		c.field = fieldAt[T, string](offset)
	case reflect.TypeFor[int]():
		c.field = fieldAt[T, int](offset)
	case reflect.TypeFor[int64]():
		c.field = fieldAt[T, int64](offset)
	case reflect.TypeFor[float64]():
		c.field = fieldAt[T, float64](offset)
	case maybeType:
		c.field = fieldAt[T, Maybe](offset)
	case reflect.TypeFor[bool]():
		c.field = fieldAt[T, bool](offset)
	case timeType:
		c.field = fieldAt[T, time.Time](offset)
	default:
		return c, fmt.Errorf("type %s is not a column type (string, int, int64, float64, recorder.Maybe, bool, time.Time)", ft)
	}
	if c.added {
		if err := decodeCell(reflect.New(ft).Interface(), c.def); err != nil {
			return c, fmt.Errorf("csv tag %q: default %q: %w", tag, c.def, err)
		}
	}
	return c, nil
}

// fieldAt points at the F at offset in a T: the accessor of a tagged
// column, resolved once, so that writing a cell costs no reflection and
// no allocation. offset comes from reflect's StructField.Offset along a
// path of fields held by value, so the pointer stays inside *r.
func fieldAt[T, F any](offset uintptr) func(*T) any {
	return func(r *T) any { return (*F)(unsafe.Add(unsafe.Pointer(r), offset)) }
}
