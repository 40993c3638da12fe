package schema

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/buildinfo"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Version{"": {1, 0}, "1.0": {1, 0}, "1.3": {1, 3}, "2.13": {2, 13}, "0.9": {0, 9}} {
		if v, err := Parse(s); err != nil || v != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, v, err, want)
		}
	}
	for _, s := range []string{"1", "1.", ".1", "1.0.0", "v1.0", "-1.0", "1.-0", "01.0", "1.00", "1.0 ", "1,0", "1e3.0", "9999999.0"} {
		if v, err := Parse(s); err == nil || !strings.Contains(err.Error(), "want MAJOR.MINOR") {
			t.Errorf("Parse(%q) = %v, %v; want an error", s, v, err)
		}
	}
}

// Same or older: strict; a newer minor: lenient, said once; a newer or
// older major: refused by name.
func TestCompareAndCheck(t *testing.T) {
	for _, c := range []struct {
		got, own string
		strict   bool
		err      string
	}{
		{"", "1.0", true, ""},
		{"1.0", "1.0", true, ""},
		{"1.0", "1.2", true, ""},
		{"1.3", "1.0", false, ""},
		{"2.0", "1.0", false, "assessment.json: schema 2.0: this slowlab (" + buildinfo.Version() + ") reads 1.x; use a newer slowlab"},
		{"0.4", "1.0", false, "assessment.json: schema 0.4: this slowlab (" + buildinfo.Version() + ") reads 1.x only"},
		{"one", "1.0", false, `assessment.json: schema_version "one": want MAJOR.MINOR, such as 1.0`},
	} {
		strict, err := Compare("assessment.json", c.got, c.own)
		if strict != c.strict || (err == nil) != (c.err == "") || err != nil && !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("Compare(%q, %q) = %v, %v; want %v, %q", c.got, c.own, strict, err, c.strict, c.err)
		}
	}
	var notes bytes.Buffer
	defer SetNotes(&notes)()
	for range 3 {
		if strict, err := Check("assessment.json", "1.3", "1.0"); strict || err != nil {
			t.Fatalf("Check 1.3 = %v, %v", strict, err)
		}
	}
	Check("assessment.json", "1.0", "1.0")
	want := "assessment.json: schema 1.3 is newer than this slowlab's 1.0; fields it does not know were ignored\n"
	if notes.String() != want {
		t.Errorf("notes %q, want %q once", notes.String(), want)
	}
	if _, err := Compare("", "3.1", "1.0"); err == nil || !strings.HasPrefix(err.Error(), "schema 3.1: this slowlab") {
		t.Errorf("without a name: %v", err)
	}
}

type doc struct {
	SchemaVersion string `json:"schema_version"`
	Stack         string `json:"stack"`
}

// DecodeJSON refuses an unknown field at the same or an older version,
// ignores it at a newer minor one with a note, refuses a newer major one,
// a version that is not a string and a second value.
func TestDecodeJSON(t *testing.T) {
	var notes bytes.Buffer
	defer SetNotes(&notes)()
	for _, c := range []struct{ in, err, stack string }{
		{`{"stack": "real"}`, "", "real"},
		{`{"schema_version": "1.0", "stack": "real"}`, "", "real"},
		{`{"schema_version": "1.0", "stack": "real", "stak": "x"}`, `doc.json: json: unknown field "stak"`, ""},
		{`{"stack": "real", "stak": "x"}`, `doc.json: json: unknown field "stak"`, ""},
		{`{"schema_version": "1.1", "stack": "real", "stak": "x"}`, "", "real"},
		{`{"schema_version": "2.0", "stack": "real"}`, "doc.json: schema 2.0: this slowlab", ""},
		{`{"schema_version": 1.0, "stack": "real"}`, `doc.json: schema_version 1.0: want a string such as "1.0"`, ""},
		{`{"schema_version": "1.1", "stack": 3}`, "doc.json: json: cannot unmarshal number", ""},
		{`{"stack": "real"} {}`, "doc.json: more than one JSON value", ""},
		{`[]`, "doc.json: json: cannot unmarshal array", ""},
	} {
		var d doc
		err := DecodeJSON("doc.json", []byte(c.in), "1.0", &d)
		if (err == nil) != (c.err == "") || err != nil && !strings.HasPrefix(err.Error(), c.err) || err == nil && d.Stack != c.stack {
			t.Errorf("%s: %+v, %v; want %q, stack %q", c.in, d, err, c.err, c.stack)
		}
	}
	if want := "doc.json: schema 1.1 is newer than this slowlab's 1.0; fields it does not know were ignored\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
}

func TestOf(t *testing.T) {
	for in, want := range map[string]string{`{"schema_version": "1.2"}`: "1.2", `{}`: "", `null`: "", `[1]`: "", `{"schema_version": null}`: "", `{`: ""} {
		if got, err := Of([]byte(in)); err != nil || got != want {
			t.Errorf("Of(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}
