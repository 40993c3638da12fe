package recorder

import (
	"encoding/csv"
	"errors"
	"fmt"

	"os"
	"sync"
)

// CutRow is the last row of a results file that a killed writer cut short
// (see Reader): a final line without its newline that does not parse.
type CutRow struct {
	File   string // the file's path, or its schema file name for a reader on no file
	Line   int    // 1-based line the row starts on
	Offset int64  // byte offset the row starts at: the file's size without it
	Err    error  // why the row does not parse
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
