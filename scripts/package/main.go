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
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

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
	// The version --version, the landing page and
	// slowlab_exporter_build_info show; the revision the go command
	// stamps from git (vcs.revision).
	ldflags := "-X github.com/prometheus/common/version.Version=" + version
	for out, pkg := range map[string]string{bin: "./cmd/slowlab", exporterBin: "./cmd/slowlab-exporter"} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w: %s", pkg, err, b)
		}
	}
	docs := func(name string) files.Contents {
		return files.Contents{{Source: filepath.Join(root, "deploy/debian/copyright"), Destination: "/usr/share/doc/" + name + "/copyright",
			FileInfo: &files.ContentFileInfo{Mode: 0o644}}}
	}
	exporter := &nfpm.Info{
		Name:        ExporterPackage,
		Description: "slowlab exporter: slow clients in production, per group of processes\nA Prometheus exporter of cgroup CPU, throttling and memory, process states and wait\nchannels, proxy temp files and TCP socket queues (send, receive, accept) per group of\nprocesses, with the systemd unit that runs it as a dynamic user with two capabilities.",
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
		Name:        LabPackage,
		Description: "slowlab: slow-client experiments on your own stack\nThe lab: the experiments, slowlab assess (how many slow clients of each kind take a\nstack down), the load generator, recorder and report, and the exporter as a\nsubcommand. The exporter for production is in slowlab-exporter.",
		Overridables: nfpm.Overridables{
			Contents: append(files.Contents{{Source: bin, Destination: BinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}}}, docs(LabPackage)...),
		},
	}
	var debs []string
	for _, info := range []*nfpm.Info{exporter, lab} {
		info.Arch, info.Platform, info.Version, info.VersionSchema = runtime.GOARCH, "linux", version, "none"
		info.Section, info.Priority, info.Maintainer = "net", "optional", "slowlab <slowlab@localhost>"
		info.Homepage, info.License = "https://github.com/slowlab/slowlab", "Apache-2.0"
		deb, err := writeDeb(nfpm.WithDefaults(info), out)
		if err != nil {
			return nil, err
		}
		debs = append(debs, deb)
	}
	return debs, nil
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
