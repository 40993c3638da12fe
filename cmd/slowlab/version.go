package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/prometheus/common/version"
)

func init() {
	register(command{name: "version", summary: "which slowlab this is (also slowlab --version)", run: runVersion})
}

// runVersion prints the version (internal/buildinfo: a release's, or the
// one the go command stamped from the checkout), the commit and the Go
// that built it, in the layout of slowlab-exporter --version.
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", "\n\nPrints which slowlab this is: its version (a release's, else the one the go command stamped\n"+
		"from the checkout with -buildvcs=true, else devel), the commit and the Go that built it; a\n"+
		"branch, build user, build date or tags nobody stamped is left out.", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, versionText("slowlab", buildStamp{
		version: version.Version, branch: version.Branch, revision: version.GetRevision(),
		user: version.BuildUser, date: version.BuildDate, tags: version.GetTags(),
	}))
	return nil
}

// buildStamp is what the build recorded about this binary; "" or
// "unknown" means nobody stamped it.
type buildStamp struct{ version, branch, revision, user, date, tags string }

// versionText is prometheus/common/version.Print's layout without what
// is not known: "slowlab, version V (branch: B, revision: R)", the
// parenthesis holding only the parts stamped (gone when neither is), then
// one line each for the build user, build date, go version, platform and
// tags, the unstamped ones left out.
func versionText(program string, b buildStamp) string {
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
