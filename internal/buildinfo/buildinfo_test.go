package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/common/version"
)

func TestFromBuild(t *testing.T) {
	const rev = "26536c62f41c993de9bd83a0882d5b8d86355293"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, "devel"},
		{"a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Settings: vcs("false")}, true, "0.1.0"},
		{"a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206085501-26536c62f41c"}, Settings: vcs("false")}, true,
			"0.0.0-20261206085501-26536c62f41c"},
		{"a changed tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206085501-26536c62f41c+dirty"}, Settings: vcs("true")}, true,
			"0.0.0-20261206085501-26536c62f41c+dirty"},
		{"(devel) with a revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, true, "devel-26536c62f41c"},
		{"(devel), changed", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")}, true, "devel-26536c62f41c+dirty"},
		{"(devel), no version control", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "devel"},
	} {
		if got := fromBuild(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionNeverEmpty: importing the package leaves prometheus's
// version set, whatever built the test binary.
func TestVersionNeverEmpty(t *testing.T) {
	if Version() == "" || version.Version != Version() {
		t.Fatalf("Version %q, prometheus/common/version %q", Version(), version.Version)
	}
}

// TestText: a fully stamped build prints every part in version.Print's
// layout; one with a revision only prints no branch, user, date or tags.
func TestText(t *testing.T) {
	full := text("slowlab", buildStamp{version: "0.1.0", branch: "main", revision: "abc", user: "u@h", date: "20260101", tags: "netgo"})
	for _, want := range []string{"slowlab, version 0.1.0 (branch: main, revision: abc)\n", "\n  build user:       u@h\n", "\n  build date:       20260101\n", "\n  go version:       go", "\n  tags:             netgo"} {
		if !strings.Contains(full, want) {
			t.Errorf("fully stamped: no %q in\n%s", want, full)
		}
	}
	if got := text("slowlab", buildStamp{version: "devel", revision: "abc"}); !strings.HasPrefix(got, "slowlab, version devel (revision: abc)\n  go version:") {
		t.Errorf("revision only:\n%s", got)
	}
}
