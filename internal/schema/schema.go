// Package schema is the one rule for the versions of the JSON and YAML
// files slowlab writes (assessment.json, loadgen.json, environment.json,
// scenario.yaml, manifest.json): each says its format's version in
// schema_version, "MAJOR.MINOR", and every reader checks it here.
//
// The rule: a file without schema_version (written before slowlab
// versioned its files) is 1.0. A file of this slowlab's version or an
// older one is read strictly: a field the reader does not know is an
// error (a typo, caught). A file of a newer MINOR version is read with
// the fields this slowlab does not know ignored, and a one-line note says
// so once (Note). A file of a newer MAJOR version is refused, naming the
// file, its version and this slowlab's. A writer bumps MINOR for an added
// field that an older reader may ignore, MAJOR for any other change.
//
// What it leaves to others: each format's own version constant and
// fields (its package), where a note is printed (the process's stderr
// unless SetNotes).
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/slowlab/slowlab/internal/buildinfo"
)

// Field is the name of the version field in every versioned file.
const Field = "schema_version"

// Before is the version of a file without schema_version.
const Before = "1.0"

// Version is a format's MAJOR.MINOR.
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Parse reads "MAJOR.MINOR": two decimal numbers without sign or
// leading zeros ("1.0", "2.13"); "" is Before.
func Parse(s string) (Version, error) {
	if s == "" {
		s = Before
	}
	major, minor, ok := strings.Cut(s, ".")
	a, errA := number(major)
	b, errB := number(minor)
	if !ok || errA != nil || errB != nil {
		return Version{}, fmt.Errorf("%s %q: want MAJOR.MINOR, such as 1.0", Field, s)
	}
	return Version{a, b}, nil
}

func number(s string) (int, error) {
	if s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a number")
	}
	return strconv.Atoi(s)
}

// Compare says how a reader that knows version own of name's format
// reads a file that says got: strictly (true: same or older), or with the
// fields it does not know ignored (false: a newer minor version). A newer
// major version, or a version that does not parse, is an error that
// starts with name (unless name is ""); own must parse.
func Compare(name, got, own string) (strict bool, err error) {
	o, err := Parse(own)
	if err != nil {
		panic(fmt.Sprintf("schema: %s: own version: %v", name, err))
	}
	g, err := Parse(got)
	switch {
	case err != nil:
	case g.Major > o.Major:
		err = fmt.Errorf("schema %s: this slowlab (%s) reads %d.x; use a newer slowlab", g, buildinfo.Version(), o.Major)
	case g.Major < o.Major:
		err = fmt.Errorf("schema %s: this slowlab (%s) reads %d.x only; use the slowlab that wrote it", g, buildinfo.Version(), o.Major)
	}
	if err != nil && name != "" {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return err == nil && g.Minor <= o.Minor, err
}

// Check is Compare that also says, once (Noted), that a file of a newer
// minor version is read with the fields it does not know ignored.
func Check(name, got, own string) (strict bool, err error) {
	strict, err = Compare(name, got, own)
	if err == nil && !strict {
		Noted(name, got, own)
	}
	return strict, err
}

// Noted says (Note) that name, of version got, a newer minor version
// than own, was read with the fields this slowlab does not know ignored.
func Noted(name, got, own string) {
	g, _ := Parse(got)
	Note(fmt.Sprintf("%s: schema %s is newer than this slowlab's %s; fields it does not know were ignored", name, g, own))
}

// notes is where Note writes, and what it said.
var notes = struct {
	sync.Mutex
	w    io.Writer
	said map[string]bool
}{said: map[string]bool{}}

// Note writes msg on its own line, once per process (until SetNotes):
// on the process's stderr unless SetNotes named another writer.
func Note(msg string) {
	notes.Lock()
	defer notes.Unlock()
	if notes.said[msg] {
		return
	}
	notes.said[msg] = true
	w := notes.w
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintln(w, msg)
}

// SetNotes sends the notes to w (nil: stderr) and forgets what was said;
// restore puts back the writer before.
func SetNotes(w io.Writer) (restore func()) {
	notes.Lock()
	defer notes.Unlock()
	before := notes.w
	notes.w, notes.said = w, map[string]bool{}
	return func() {
		notes.Lock()
		defer notes.Unlock()
		notes.w, notes.said = before, map[string]bool{}
	}
}

// Of is the schema_version of the JSON object b ("" when it has none,
// or b is not an object); an error when the field is not a string.
func Of(b []byte) (string, error) {
	var head struct {
		V json.RawMessage `json:"schema_version"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&head); err != nil || head.V == nil || string(head.V) == "null" {
		return "", nil // the decoding proper says what is wrong with b
	}
	var v string
	if err := json.Unmarshal(head.V, &v); err != nil {
		return "", fmt.Errorf("%s %s: want a string such as %q", Field, head.V, Before)
	}
	return v, nil
}

// DecodeJSON decodes b, one JSON value of name's format (this slowlab
// knows version own of it), into v, whose type has the schema_version
// field: strictly (an unknown field is an error) unless b is of a newer
// minor version; a newer major version is refused (Check). More than one
// value is an error. Every error starts with name.
func DecodeJSON(name string, b []byte, own string, v any) error {
	got, err := Of(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	strict, err := Check(name, got, own)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: more than one JSON value", name)
	}
	return nil
}
