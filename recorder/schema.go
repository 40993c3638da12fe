package recorder

// Row is implemented by each row type of a results file: it hands the
// generic writers and readers the type's schema. Each row type declares
// its columns in its own file (requests.go, runs.go, gap.go, ...), so a
// new results file is one new file with its type, its schema and this
// method; nothing else in recorder changes. The method is unexported, so
// only recorder's own types are rows.
type Row[T any] interface {
	schema() *schema[T]
}

// Precision of float columns: digits kept after the decimal point.
const (
	msOfS   = 3 // seconds columns keep milliseconds
	usOfMS  = 3 // millisecond columns keep microseconds
	usOfS   = 6 // cgroup CPU counters are microseconds at the source
	whole   = 0 // bytes and counts
	kibOfMi = 3 // MiB columns keep about a KiB
	milli   = 3 // cores keep millicores
)

// column is one CSV column of row type T. field returns a pointer to the
// row's field: *string, *int, *int64, *float64, *Maybe, *bool or
// *time.Time; decimals is the precision of float and Maybe columns.
type column[T any] struct {
	name     string
	decimals int
	field    func(*T) any
}

func col[T any](name string, decimals int, field func(*T) any) column[T] {
	return column[T]{name: name, decimals: decimals, field: field}
}

// schema is the CSV layout of one row type: its file name and columns, in
// order.
type schema[T any] struct {
	file string
	cols []column[T]
}

// schemaOf returns the layout of row type T.
func schemaOf[T Row[T]]() *schema[T] {
	var zero T
	return zero.schema()
}

// Header returns the CSV header of row type T: its columns, the contract, in
// order. The caller may modify the returned slice.
func Header[T Row[T]]() []string {
	cols := schemaOf[T]().cols
	h := make([]string, len(cols))
	for i, c := range cols {
		h[i] = c.name
	}
	return h
}

// FileName returns the name of the results file holding rows of type T,
// such as "requests.csv".
func FileName[T Row[T]]() string { return schemaOf[T]().file }
