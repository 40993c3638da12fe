// Package buildinfo says which slowlab this binary is: the version a
// release build sets (make release passes -ldflags "-X
// github.com/prometheus/common/version.Version=X.Y.Z"), else the module
// version the go command stamped from the checkout it built (a tag, or a
// pseudo-version naming the commit, "+dirty" when the tree had changes),
// else "devel" (a build with no version control information, such as go
// run or -buildvcs=false).
//
// Importing it fills prometheus/common/version's Version when -ldflags
// left it empty, so the exporter's
// slowlab_exporter_build_info and both binaries' --version say the same.
// What it leaves to others: printing (the commands), recording the
// version in results (lab's environment.json and manifest).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// Devel is the version of a binary built without version information.
const Devel = "devel"

func init() {
	if version.Version == "" {
		version.Version = fromBuild(debug.ReadBuildInfo())
	}
}

// Version is this binary's version: never empty.
func Version() string { return version.Version }

// fromBuild reads the module version and the VCS revision the go command
// recorded. A version of "(devel)" or none, with a revision, becomes
// "devel-<12 hex digits>", so a binary from a tree the go command could
// not name still says which commit it came from.
func fromBuild(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return Devel
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if v := strings.TrimPrefix(info.Main.Version, "v"); v != "" && v != "(devel)" {
		return v
	}
	if rev == "" {
		return Devel
	}
	v := Devel + "-" + rev[:min(12, len(rev))]
	if modified {
		v += "+dirty"
	}
	return v
}

// Text is what --version prints for program: its version, the commit,
// the Go that built it (see text), in prometheus/common/version.Print's
// layout less what nobody stamped.
func Text(program string) string {
	return text(program, buildStamp{version: version.Version, branch: version.Branch, revision: version.GetRevision(),
		user: version.BuildUser, date: version.BuildDate, tags: version.GetTags()})
}

// buildStamp is what the build recorded about this binary; "" or
// "unknown" means nobody stamped it.
type buildStamp struct{ version, branch, revision, user, date, tags string }

// text is prometheus/common/version.Print's layout without what
// is not known: "slowlab, version V (branch: B, revision: R)", the
// parenthesis holding only the parts stamped (gone when neither is), then
// one line each for the build user, build date, go version, platform and
// tags, the unstamped ones left out.
func text(program string, b buildStamp) string {
	known := func(s string) bool { return s != "" && s != "unknown" }
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, version %s", program, b.version)
	var vcs []string
	if known(b.branch) {
		vcs = append(vcs, "branch: "+b.branch)
	}
	if known(b.revision) {
		vcs = append(vcs, "revision: "+b.revision)
	}
	if len(vcs) > 0 {
		fmt.Fprintf(&sb, " (%s)", strings.Join(vcs, ", "))
	}
	line := func(name, value string) {
		if known(value) {
			fmt.Fprintf(&sb, "\n  %-18s%s", name+":", value)
		}
	}
	line("build user", b.user)
	line("build date", b.date)
	line("go version", runtime.Version())
	line("platform", runtime.GOOS+"/"+runtime.GOARCH)
	line("tags", b.tags)
	return sb.String()
}
