package assess

import (
	"errors"
	"testing"
)

// TestNameFlag: a field's error names the flag that set it; a field no
// flag was given for keeps its YAML path, except the external: block's,
// which only flags make; the renamed error wraps the original.
func TestNameFlag(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, g := range names {
				if g == n {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		err   string
		given []string
		want  string
	}{
		{"max_clients 0: allowed 1 to 1024", []string{"max-clients"}, "--max-clients 0: allowed 1 to 1024"},
		{"max_clients 0: allowed 1 to 1024", nil, "max_clients 0: allowed 1 to 1024"},
		{"external.large_url: assess sends these requests; give their URL", nil, "--large-url: assess sends these requests; give their URL"},
		{"fail_on: idle<16: over max_clients 8", []string{"fail-on", "max-clients"}, "--fail-on: idle<16: over max_clients 8"},
		{"paths.fast \"x\": must start with /", nil, "paths.fast \"x\": must start with /"},
		{"nothing to name", []string{"window"}, "nothing to name"},
	} {
		orig := errors.New(tc.err)
		got := NameFlag(orig, given(tc.given...))
		if got.Error() != tc.want || !errors.Is(got, orig) {
			t.Errorf("NameFlag(%q, %v) = %q (wraps it: %t), want %q", tc.err, tc.given, got, errors.Is(got, orig), tc.want)
		}
	}
	if NameFlag(nil, given()) != nil {
		t.Error("NameFlag(nil) is not nil")
	}
}
