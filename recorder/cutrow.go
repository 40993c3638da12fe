package recorder

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"

	"os"
	"sync"
)

// CutRow is the last row of a results file that a killed writer cut short
// (see Reader): a final line without its newline.
type CutRow struct {
	File   string // the file's path, or its schema file name for a reader on no file
	Line   int    // 1-based line the row starts on
	Offset int64  // byte offset the row starts at: the file's size without it
	Err    error  // why the row is taken for cut: its parse error, or errNoNewline
	// Removed is set when AppendFile cut the row off the file before
	// appending (a resumed session); else a reader left it out.
	Removed bool
}

func (c CutRow) String() string {
	what := "left out"
	if c.Removed {
		what = "removed it before appending"
	}
	return fmt.Sprintf("%s: its last row (line %d) was cut short (the session was killed?); %s (%v)", c.File, c.Line, what, c.Err)
}

// maxNotedFiles bounds the files whose cut rows are remembered as noted.
const maxNotedFiles = 1024

var cutNotes struct {
	mu   sync.Mutex
	fn   func(CutRow)
	seen map[string]bool
}

// NoteCutRows sends every cut row a reader leaves out, or AppendFile
// removes, to fn, once per file (by CutRow.File and Removed), until the
// returned restore is called. Without it, each is printed once to
// standard error.
func NoteCutRows(fn func(CutRow)) (restore func()) {
	cutNotes.mu.Lock()
	defer cutNotes.mu.Unlock()
	oldFn, oldSeen := cutNotes.fn, cutNotes.seen
	cutNotes.fn, cutNotes.seen = fn, nil
	return func() {
		cutNotes.mu.Lock()
		defer cutNotes.mu.Unlock()
		cutNotes.fn, cutNotes.seen = oldFn, oldSeen
	}
}

// noteCut tells the user about c once per file.
func noteCut(c CutRow) {
	cutNotes.mu.Lock()
	defer cutNotes.mu.Unlock()
	key := fmt.Sprintf("%t %s", c.Removed, c.File)
	if cutNotes.seen[key] {
		return
	}
	if cutNotes.seen == nil {
		cutNotes.seen = map[string]bool{}
	}
	if len(cutNotes.seen) < maxNotedFiles {
		cutNotes.seen[key] = true
	}
	if cutNotes.fn != nil {
		cutNotes.fn(c)
		return
	}
	fmt.Fprintf(os.Stderr, "slowlab: warning: %s\n", c)
}

// startLine is the line a record that does not parse starts on, from
// its *csv.ParseError; 0 for other errors.
func startLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.StartLine
	}
	return 0
}

// errNoNewline is why a last row that parses is left out all the same.
var errNoNewline = errors.New("no newline at its end, so its last value may be cut")

// tailReader counts the bytes read from r and follows CSV's quoting, so
// a Reader can tell whether the input ends with a complete record: with a
// newline outside quotes.
//
// It also bounds a record to MaxRecordBytes, so a line that never ends (a
// corrupted file, or one that is not slowlab's) fails the read instead of
// growing it without bound.
type tailReader struct {
	r     io.Reader
	n     int64
	state byte // where the last byte left the record: one of the lex constants
	eof   bool
	lines int   // newlines read, quoted ones included: the line is lines+1
	start int   // the line the record being read starts on
	rec   int64 // the bytes of the record being read
	err   error // a record over MaxRecordBytes: every later read fails so
}

// MaxRecordBytes bounds one CSV record as readers read it: slowlab's rows
// are under 1 KiB, a failure's text included.
const MaxRecordBytes = 1 << 20

// cutAtEnd reports whether the record cr just read is the cut row of a
// killed writer: it ends the input, and the input does not end with a
// newline outside quotes.
func (t *tailReader) cutAtEnd(cr *csv.Reader) bool {
	return t.eof && t.state != lexEnd && cr.InputOffset() == t.n
}

// The states of tailReader's lexer: where the last byte read left the
// record.
const (
	lexEnd      = iota // after a newline outside quotes: a record is complete
	lexStart           // at a field's start, after a comma
	lexField           // in an unquoted field
	lexQuoted          // in a quoted field
	lexQuoteEnd        // after a quote in a quoted field: it ends or escapes one
)

func (t *tailReader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.r.Read(p)
	t.n += int64(n)
	st := t.state
	for _, c := range p[:n] {
		if st == lexEnd {
			t.start, t.rec = t.lines+1, 0
		}
		if t.rec++; t.rec > MaxRecordBytes {
			t.err = fmt.Errorf("line %d: a record over %d bytes", t.start, MaxRecordBytes)
			return 0, t.err
		}
		if c == '\n' {
			t.lines++
		}
		switch {
		case st == lexQuoted:
			if c == '"' {
				st = lexQuoteEnd
			}
		case c == '\n':
			st = lexEnd
		case c == ',':
			st = lexStart
		case c == '"' && st != lexField:
			st = lexQuoted // opens a field, or escapes a quote in one
		default:
			st = lexField
		}
	}
	t.state = st
	if errors.Is(err, io.EOF) {
		t.eof = true
	}
	return n, err
}
