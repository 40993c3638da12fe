package cliflag

import (
	"flag"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A list flag replaces its default with the values given, and refuses a
// value given twice (equal once parsed) or an empty one, naming it.
func TestList(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		repeat bool
		want   []int
		err    string
	}{
		{args: nil, want: []int{9}},
		{args: []string{"-n", "1,2"}, want: []int{1, 2}},
		{args: []string{"-n", "1,2", "-n", "3"}, want: []int{3}}, // the last list wins
		{args: []string{"-n", "1", "-n", "2"}, repeat: true, want: []int{1, 2}},
		{args: []string{"-n", "1,01"}, err: `invalid value "1,01" for flag -n: "1,01": 01 given twice (as 1)`},
		{args: []string{"-n", "1", "-n", "1"}, repeat: true, err: `invalid value "1" for flag -n: "1": given twice`},
		{args: []string{"-n", "1,,2"}, err: `invalid value "1,,2" for flag -n: "1,,2": an empty value`},
		{args: []string{"-n", "x"}, err: `invalid value "x" for flag -n: "x": want numbers`},
	} {
		got := []int{9}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Usage = func() {}
		fs.SetOutput(discard{})
		fs.Var(&List[int]{To: &got, Parse: strconv.Atoi, Want: "numbers", Repeat: tc.repeat}, "n", "")
		err := fs.Parse(tc.args)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%v: %v, want %s", tc.args, err, tc.err)
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%v: %v %v, want %v", tc.args, got, err, tc.want)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// FuzzList: whatever a list flag is given, it either refuses it or holds
// each value once, as many as were given.
func FuzzList(f *testing.F) {
	for _, s := range []string{"1,2", "1,01", "1,,2", "", ",", " 3 , 4 ", "x", "7,7,7"} {
		f.Add(s, false)
	}
	f.Add("5", true)
	f.Fuzz(func(t *testing.T, v string, repeat bool) {
		var got []int
		l := &List[int]{To: &got, Parse: strconv.Atoi, Repeat: repeat}
		if err := l.Set(v); err != nil {
			return
		}
		seen := map[int]bool{}
		for _, x := range got {
			if seen[x] {
				t.Fatalf("%q: %v holds %d twice", v, got, x)
			}
			seen[x] = true
		}
		if n := len(strings.Split(v, ",")); !repeat && len(got) != n {
			t.Fatalf("%q: %d values, want %d", v, len(got), n)
		}
	})
}
