package cliflag

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		usage   bool   // a UsageError
		msg     string // its text
		helpOut string // what --help printed
	}{
		{args: []string{"-n", "3"}},
		{args: []string{"--bogus"}, usage: true, msg: "flag provided but not defined: -bogus (see --help)"},
		{args: []string{"extra"}, usage: true, msg: `unexpected argument "extra" (see --help)`},
		{args: []string{"--help"}, helpOut: "Usage: prog [flags]\n\nFlags:\n  -n int"},
	} {
		var out strings.Builder
		fs := NewFlagSet("prog", "[flags]", &out)
		n := fs.Int("n", 0, "a count")
		err := Parse(fs, tc.args)
		var ue UsageError
		switch {
		case tc.usage && (!errors.As(err, &ue) || ue.Msg != tc.msg):
			t.Errorf("%v: %v, want UsageError %q", tc.args, err, tc.msg)
		case tc.helpOut != "" && (!errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), tc.helpOut)):
			t.Errorf("%v: %v, printed %q", tc.args, err, out.String())
		case !tc.usage && tc.helpOut == "" && (err != nil || *n != 3 || out.Len() != 0):
			t.Errorf("%v: %v, n %d, printed %q", tc.args, err, *n, out.String())
		}
	}
}
