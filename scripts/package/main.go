// Command package builds slowlab's two Debian packages with nfpm:
// slowlab-exporter, the standalone exporter (static; it links nothing but
// the exporter, so it uses about half the memory of the whole binary) with
// its systemd unit (deploy/systemd/), /etc/default/slowlab-exporter and a
// default /etc/slowlab/exporter.yml (configuration files dpkg keeps when
// the user changed them), the Grafana dashboards and Prometheus rules
// under /usr/share/slowlab-exporter/ and the maintainer scripts of
// deploy/debian/ (enable and start on install, restart on upgrade, stop on
// remove, clean purge); and slowlab, the lab binary. `make package` runs
// it; it writes dist/slowlab-exporter_VERSION_ARCH.deb and
// dist/slowlab_VERSION_ARCH.deb.
//
// With -release (`make release VERSION=X.Y.Z`) it builds, for each
// architecture of -arch (amd64 and arm64 by default, cross-compiled), a
// tarball slowlab_VERSION_linux_ARCH.tar.gz (both binaries, LICENSE,
// README.md, CHANGELOG.md, the pages they link to: CONTRIBUTING.md,
// docs/*.md, exporter/README.md and dashboards/README.md; the dashboards
// and the rules with their runbook; a page linking to a file the tarball
// does not ship is refused) and the two .debs, then SHA256SUMS over them
// all, as sha256sum -c reads it.
//
//	go run ./scripts/package [-out DIR] [-version V] [-arch GOARCH]
//	go run ./scripts/package -release -version X.Y.Z [-out DIR] [-arch amd64,arm64]
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

// Where the package puts its files.
const (
	BinPath         = "/usr/bin/slowlab"
	ExporterBinPath = "/usr/bin/slowlab-exporter"
	UnitPath        = "/lib/systemd/system/slowlab-exporter.service"
	ConfigPath      = "/etc/slowlab/exporter.yml"
	DefaultsPath    = "/etc/default/slowlab-exporter"
	// Maintainer is the packages' maintainer field (no project mail
	// address yet: lintian's bogus-mail-host is overridden for it).
	Maintainer = "slowlab <slowlab@localhost>"
	// The packages: the exporter alone, and the lab.
	ExporterPackage = "slowlab-exporter"
	LabPackage      = "slowlab"
	// ShareDir holds the exporter package's dashboards/ and alerts/.
	ShareDir = "/usr/share/slowlab-exporter"
)

func main() {
	out := flag.String("out", "dist", "directory to write the artifacts to")
	version := flag.String("version", "", "package version (default: 0.0~git<commit>; with -release, X.Y.Z and required)")
	rel := flag.Bool("release", false, "a release: for each -arch a tarball and the two .debs, then SHA256SUMS over them (out must be empty)")
	arches := flag.String("arch", "", "comma-separated GOARCH list (default: this machine's; with -release, "+strings.Join(ReleaseArches, ",")+")")
	flag.Parse()
	var list []string
	for _, a := range strings.Split(*arches, ",") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	var artifacts []string
	var err error
	switch {
	case *rel:
		artifacts, err = release(".", *out, *version, list)
	case len(list) > 1:
		err = fmt.Errorf("-arch %s: one architecture without -release", *arches)
	case len(list) == 1:
		artifacts, err = buildArch(".", *out, *version, list[0])
	default:
		artifacts, err = build(".", *out, *version)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(artifacts, "\n"))
}

// build compiles ./cmd/slowlab and ./cmd/slowlab-exporter of the module at
// root for this machine's architecture and packages them: slowlab-exporter
// (the standalone exporter, the unit, its config and defaults, the
// dashboards and rules, the maintainer scripts of deploy/debian) and
// slowlab (the lab binary); it returns the two .debs' paths, the
// exporter's first.
func build(root, out, version string) ([]string, error) {
	return buildArch(root, out, version, runtime.GOARCH)
}

// buildArch is build for arch (a GOARCH, also the .debs' architecture).
func buildArch(root, out, version, arch string) ([]string, error) {
	if version == "" {
		rev, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			return nil, fmt.Errorf("version: git rev-parse: %w (give -version)", err)
		}
		version = "0.0~git" + strings.TrimSpace(string(rev))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "slowlab-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bins, err := compileArch(root, tmp, version, arch)
	if err != nil {
		return nil, err
	}
	return writeDebs(root, out, tmp, version, arch, bins)
}

// binaries are the paths of the two programs, built for one architecture.
type binaries struct{ lab, exporter string }

// compileArch builds both programs for arch into dir.
func compileArch(root, dir, version, arch string) (binaries, error) {
	b := binaries{lab: filepath.Join(dir, "slowlab"), exporter: filepath.Join(dir, "slowlab-exporter")}
	return b, compile(root, version, arch, dir, "./cmd/slowlab", "./cmd/slowlab-exporter")
}

// writeDebs writes the exporter's and the lab's .debs for arch, with bins
// as their binaries, to out (tmp holds the changelog meanwhile), and
// returns their paths, the exporter's first.
func writeDebs(root, out, tmp, version, arch string, bins binaries) ([]string, error) {
	changelog := filepath.Join(tmp, "changelog.gz")
	if err := writeChangelog(changelog, version); err != nil {
		return nil, err
	}
	// Each package's copyright, changelog and lintian overrides (each
	// tag overridden says why in deploy/debian/NAME.lintian-overrides).
	docs := func(name string) files.Contents {
		return files.Contents{
			{Source: filepath.Join(root, "deploy/debian/copyright"), Destination: "/usr/share/doc/" + name + "/copyright", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			{Source: changelog, Destination: "/usr/share/doc/" + name + "/changelog.gz", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			{Source: filepath.Join(root, "deploy/debian", name+".lintian-overrides"), Destination: "/usr/share/lintian/overrides/" + name, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		}
	}
	// The dashboards and rules, for the operator to copy into Grafana
	// and Prometheus (the exporter's README says where).
	shared, err := assets(root)
	if err != nil {
		return nil, err
	}
	if err := checkLinks(ExporterPackage+"'s "+ShareDir, shared); err != nil {
		return nil, err
	}
	var monitoring files.Contents
	for _, a := range shared {
		monitoring = append(monitoring, &files.Content{Source: a.src, Destination: ShareDir + "/" + a.rel, FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	}
	exporter := &nfpm.Info{
		Name: ExporterPackage,
		Description: "Prometheus exporter of slow clients in production, per process group\n" +
			"It publishes cgroup CPU, throttling and memory, process states and wait\n" +
			"channels, proxy temp files and TCP socket queues (send, receive, accept)\n" +
			"per group of processes. Its systemd unit runs it as a dynamic user with\n" +
			"two capabilities. Grafana dashboards and Prometheus rules for it are in\n" +
			ShareDir + ".",
		Overridables: nfpm.Overridables{
			Contents: slices.Concat(files.Contents{
				{Source: bins.exporter, Destination: ExporterBinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.service"), Destination: UnitPath, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/exporter.yml"), Destination: ConfigPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.default"), Destination: DefaultsPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			}, monitoring, docs(ExporterPackage)),
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(root, "deploy/debian/postinst"),
				PreRemove:   filepath.Join(root, "deploy/debian/prerm"),
				PostRemove:  filepath.Join(root, "deploy/debian/postrm"),
			},
		},
	}
	lab := &nfpm.Info{
		Name: LabPackage,
		Description: "slow-client experiments and assessments of your own stack\n" +
			"The lab: the experiments, slowlab assess (how many slow clients of each\n" +
			"kind take a stack down), the load generator, recorder and report, and\n" +
			"the exporter as a subcommand. The exporter for production is in the\n" +
			"slowlab-exporter package.",
		Overridables: nfpm.Overridables{
			Contents: append(files.Contents{{Source: bins.lab, Destination: BinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}}}, docs(LabPackage)...),
		},
	}
	var debs []string
	for _, info := range []*nfpm.Info{exporter, lab} {
		info.Arch, info.Platform, info.Version, info.VersionSchema = arch, "linux", version, "none"
		info.Section, info.Priority, info.Maintainer = "net", "optional", Maintainer
		info.Homepage, info.License = "https://github.com/slowlab/slowlab", "Apache-2.0"
		deb, err := writeDeb(nfpm.WithDefaults(info), out)
		if err != nil {
			return nil, err
		}
		debs = append(debs, deb)
	}
	return debs, nil
}

// revision is the commit git names for root, with "-dirty" after it when
// a tracked file differs from it (git describe's mark): the binaries are
// then not that commit's, and must not say they are. "" outside git.
func revision(root string) string {
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	r := strings.TrimSpace(string(rev))
	if status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		r += "-dirty"
	}
	return r
}

// compile builds the main packages pkgs of the module at root into dir,
// each named as the last element of its path, in one go build (which
// links them side by side), for linux/arch, static (CGO_ENABLED=0, so
// cross-compiling needs no C toolchain), stripped (-s -w: the symbol tables are not needed to run or
// to report the build; go version -m reads the build info) and with
// version as what --version, the landing page and
// slowlab_exporter_build_info show, with revision(root) as their
// revision (the go command stamps none in a worktree or with
// -buildvcs=false).
func compile(root, version, arch, dir string, pkgs ...string) error {
	ldflags := "-s -w -X github.com/prometheus/common/version.Version=" + version
	if rev := revision(root); rev != "" {
		ldflags += " -X github.com/prometheus/common/version.Revision=" + rev
	}
	// A trailing separator makes -o a directory even for one package.
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (GOARCH=%s): %w: %s", strings.Join(pkgs, " "), arch, err, b)
	}
	return nil
}

// writeDeb writes info's package to out and returns its path.
func writeDeb(info *nfpm.Info, out string) (string, error) {
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("nfpm: %w", err)
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	deb := filepath.Join(out, pkg.ConventionalFileName(info))
	f, err := os.Create(deb)
	if err != nil {
		return "", err
	}
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		os.Remove(deb)
		return "", fmt.Errorf("nfpm %s: %w", info.Name, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(deb)
		return "", err
	}
	return deb, nil
}

// fixedTime is the time in the changelog and on the tarballs' entries, so
// that two builds of one commit match.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeChangelog writes a Debian changelog for version, gzipped as
// Debian policy asks (no name or time in the header, so builds match).
func writeChangelog(path, version string) error {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	fmt.Fprintf(zw, "slowlab (%s) unstable; urgency=medium\n\n  * Built from the slowlab repository; its history is the git log.\n\n -- %s  %s\n",
		version, Maintainer, fixedTime.Format(time.RFC1123Z))
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
