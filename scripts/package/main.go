// Command package builds the exporter's Debian package with nfpm: the
// slowlab binary and the standalone slowlab-exporter binary (both static;
// the unit runs the standalone one, which links nothing but the exporter
// and so uses about half the memory), the systemd unit deploy/systemd/ and a default
// /etc/slowlab/exporter.yml, a configuration file dpkg keeps when the user
// changed it. `make package` runs it; it writes dist/slowlab_VERSION_ARCH.deb.
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
)

func main() {
	out := flag.String("out", "dist", "directory to write the .deb to")
	version := flag.String("version", "", "package version (default: 0.0~git<commit>)")
	flag.Parse()
	deb, err := build(".", *out, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	fmt.Println(deb)
}

// build compiles ./cmd/slowlab and ./cmd/slowlab-exporter of the module at root and packages them with
// the unit and config of deploy/systemd; it returns the .deb's path.
func build(root, out, version string) (string, error) {
	if version == "" {
		rev, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			return "", fmt.Errorf("version: git rev-parse: %w (give -version)", err)
		}
		version = "0.0~git" + strings.TrimSpace(string(rev))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "slowlab-package-")
	if err != nil {
		return "", err
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
			return "", fmt.Errorf("go build %s: %w: %s", pkg, err, b)
		}
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          "slowlab",
		Arch:          runtime.GOARCH,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "slowlab <slowlab@localhost>",
		Description:   "slowlab: slow-client experiments and the exporter that watches for them (cgroup CPU and memory, process states, proxy temp files, socket queues per group)",
		Homepage:      "https://github.com/slowlab/slowlab",
		License:       "Apache-2.0",
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				{Source: bin, Destination: BinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}},
				{Source: exporterBin, Destination: ExporterBinPath, FileInfo: &files.ContentFileInfo{Mode: 0o755}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.service"), Destination: UnitPath, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/exporter.yml"), Destination: ConfigPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				{Source: filepath.Join(root, "deploy/systemd/slowlab-exporter.default"), Destination: DefaultsPath, Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			},
		},
	})
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
		return "", fmt.Errorf("nfpm: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(deb)
		return "", err
	}
	return deb, nil
}
