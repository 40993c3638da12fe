package recorder

// Row is implemented by each row type of a results file: it hands the
// generic writers and readers the type's schema (the package doc says how
// a row type declares it), so a new results file changes nothing else.
type Row[T any] interface {
	Schema() *Schema[T]
}

// Precision of float columns: digits kept after the decimal point, as
// every schema names them.
const (
	DecimalsSeconds = 3 // seconds columns keep milliseconds
	DecimalsMillis  = 3 // millisecond columns keep microseconds
	DecimalsWhole   = 0 // bytes and counts
	DecimalsMiB     = 3 // MiB columns keep about a KiB
	DecimalsMicros  = 6 // cgroup CPU seconds, microseconds at the source
	DecimalsMilli   = 3 // rates and cores keep thousandths
)

// Column is one CSV column of row type T: its name, precision and field
// (Name, Decimals, Field).
type Column[T any] struct {
	name     string
	decimals int
	field    func(*T) any
	// added: the column came after its file's first layout; a file
	// written before it (without the column) reads it as def.
	added bool
	def   string
}

// Col is the column name of T whose value is what field points at, with
// decimals digits kept after the point (float and Maybe columns).
func Col[T any](name string, decimals int, field func(*T) any) Column[T] {
	return Column[T]{name: name, decimals: decimals, field: field}
}

// Added marks c as a column added to its file's layout after results
// were written without it: a file that lacks it (at its place) still
// reads, every row's cell being def, so an older results directory stays
// readable (slowlab report, --resume).
func (c Column[T]) Added(def string) Column[T] {
	c.added, c.def = true, def
	return c
}

// Name is c's CSV column name.
func (c Column[T]) Name() string { return c.name }

// Decimals is the precision of a float or Maybe column: digits kept after
// the point.
func (c Column[T]) Decimals() int { return c.decimals }

// Field returns a pointer to row's field that c holds: *string, *int,
// *int64, *float64, *Maybe, *bool or *time.Time.
func (c Column[T]) Field(row *T) any { return c.field(row) }

// Default is what a file written before c was added reads as c's cells;
// ok is false for a column of the file's first layout.
func (c Column[T]) Default() (def string, ok bool) { return c.def, c.added }

// Schema is the CSV layout of one row type: its file name and columns, in
// order: the contract of its results file.
type Schema[T any] struct {
	file string
	cols []Column[T]
}

// NewSchema is the layout of file (such as "ws-runs.csv") with cols in
// order.
func NewSchema[T any](file string, cols ...Column[T]) *Schema[T] {
	return &Schema[T]{file: file, cols: cols}
}

// Columns returns s's columns in order; the caller may modify the slice.
func (s *Schema[T]) Columns() []Column[T] { return append([]Column[T](nil), s.cols...) }

// schemaOf returns the layout of row type T.
func schemaOf[T Row[T]]() *Schema[T] {
	var zero T
	return zero.Schema()
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
