// Command package builds slowlab's two Debian packages with nfpm:
// slowlab-exporter, the standalone exporter (static; it links nothing but
// the exporter, so it uses about half the memory of the whole binary) with
// its systemd unit (deploy/systemd/), /etc/default/slowlab-exporter and a
// default /etc/slowlab/exporter.yml (configuration files dpkg keeps when
// the user changed them) and the maintainer scripts of deploy/debian/
// (enable and start on install, restart on upgrade, stop on remove, clean
// purge); and slowlab, the lab binary. `make package` runs it; it writes
// dist/slowlab-exporter_VERSION_ARCH.deb and dist/slowlab_VERSION_ARCH.deb.
//
//	go run ./scripts/package [-out DIR] [-version V]
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
)

func main() {
	out := flag.String("out", "dist", "directory to write the .debs to")
	version := flag.String("version", "", "package version (default: 0.0~git<commit>)")
	flag.Parse()
	debs, err := build(".", *out, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(debs, "\n"))
}

// build compiles ./cmd/slowlab and ./cmd/slowlab-exporter of the module at
// root and packages them: slowlab-exporter (the standalone exporter, the
// unit, its config and defaults, the maintainer scripts of deploy/debian)
// and slowlab (the lab binary); it returns the two .debs' paths, the
// exporter's first.
func build(root, out, version string) ([]string, error) {
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
	bin, exporterBin := filepath.Join(tmp, "slowlab"), filepath.Join(tmp, "slowlab-exporter")
	if err := compile(root, version, map[string]string{bin: "./cmd/slowlab", exporterBin: "./cmd/slowlab-exporter"}); err != nil {
		return nil, err
	}
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
	exporter := &nfpm.Info{
		Name: ExporterPackage,
		Description: "Prometheus exporter of slow clients in production, per process group\n" +
			"It publishes cgroup CPU, throttling and memory, process states and wait\n" +
			"channels, proxy temp files and TCP socket queues (send, receive, accept)\n" +
			"per group of processes. Its systemd unit runs it as a dynamic user with\n" +
			"two capabilities.",
		Overridables: nfpm.Overridables{
			Contents: append(files.Contents{
				{Source: exporterBin, Destination: ExporterBinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.service"), Destination: UnitPath, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/exporter.yml"), Destination: ConfigPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.default"), Destination: DefaultsPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			}, docs(ExporterPackage)...),
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
			Contents: append(files.Contents{{Source: bin, Destination: BinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}}}, docs(LabPackage)...),
		},
	}
	var debs []string
	for _, info := range []*nfpm.Info{exporter, lab} {
		info.Arch, info.Platform, info.Version, info.VersionSchema = runtime.GOARCH, "linux", version, "none"
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

// compile builds each package of the module at root to its output path,
// static, stripped (-s -w: the symbol tables are not needed to run or to
// report the build; go version -m reads the build info) and with version
// as what --version, the landing page and slowlab_exporter_build_info
// show (the revision is what the go command stamps from git).
func compile(root, version string, outputs map[string]string) error {
	ldflags := "-s -w -X github.com/prometheus/common/version.Version=" + version
	for out, pkg := range outputs {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w: %s", pkg, err, b)
		}
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

// writeChangelog writes a Debian changelog for version, gzipped as
// Debian policy asks (no name or time in the header, so builds match).
func writeChangelog(path, version string) error {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	fmt.Fprintf(zw, "slowlab (%s) unstable; urgency=medium\n\n  * Built from the slowlab repository; its history is the git log.\n\n -- %s  %s\n",
		version, Maintainer, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC1123Z))
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
