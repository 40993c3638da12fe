package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/internal/mdlink"
)

// ReleaseArches are the architectures a release is built for by default.
var ReleaseArches = []string{"amd64", "arm64"}

// SumsFile is the checksums file of a release, in sha256sum's format.
const SumsFile = "SHA256SUMS"

// releaseVersion is what a release's version must be: X.Y.Z, each a
// number (no leading v: the .debs' version is the same string).
var releaseVersion = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// asset is a file of the repository shipped beside the binaries: src its
// path, rel where it goes below the tarball's directory and ShareDir.
type asset struct{ src, rel string }

// assets returns the files of the module at root that a release ships
// beside the binaries: the dashboards (dashboards/*.json and
// dashboards/provisioning/*) and the rules with their runbook.
func assets(root string) ([]asset, error) {
	out, err := glob(root, "dashboards/*.json", "dashboards/provisioning/*")
	if err != nil {
		return nil, err
	}
	for _, rel := range []string{"alerts/slowlab.rules.yml", "alerts/runbook.md"} {
		out = append(out, asset{filepath.Join(root, rel), rel})
	}
	for _, a := range out {
		if fi, err := os.Stat(a.src); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: want a regular file (%v)", a.src, err)
		}
	}
	return out, nil
}

// glob returns the files of the module at root that match patterns, rel
// their slash-separated path from root; a pattern that matches nothing is
// an error.
func glob(root string, patterns ...string) ([]asset, error) {
	var out []asset
	for _, pattern := range patterns {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("no %s in %s", pattern, root)
		}
		for _, m := range matches {
			out = append(out, asset{m, filepath.ToSlash(strings.TrimPrefix(m, filepath.Clean(root)+string(filepath.Separator)))})
		}
	}
	return out, nil
}

// release builds the release version of the module at root into out, which
// must be empty or absent: for each of arches (ReleaseArches when empty)
// slowlab_VERSION_linux_ARCH.tar.gz and the two .debs, then SumsFile over
// them. It returns the artifacts' paths, SumsFile last.
func release(root, out, version string, arches []string) ([]string, error) {
	if version == "" {
		return nil, fmt.Errorf("a release needs a version: make release VERSION=X.Y.Z (-version X.Y.Z)")
	}
	if !releaseVersion.MatchString(version) {
		return nil, fmt.Errorf("release version %q: want X.Y.Z, three numbers without a leading v or zeros (make release VERSION=1.2.3)", version)
	}
	if len(arches) == 0 {
		arches = ReleaseArches
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: a release's %s covers the whole directory; remove it first (make release does)", out, SumsFile)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "slowlab-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var artifacts []string
	for _, arch := range arches {
		dir := filepath.Join(tmp, arch)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		bins, err := compileArch(root, dir, version, arch)
		if err != nil {
			return nil, err
		}
		tarball, err := writeTarball(root, out, version, arch, bins)
		if err != nil {
			return nil, err
		}
		debs, err := writeDebs(root, out, dir, version, arch, bins)
		if err != nil {
			return nil, err
		}
		artifacts = append(append(artifacts, tarball), debs...)
	}
	sums, err := writeSums(out, artifacts)
	if err != nil {
		return nil, err
	}
	return append(artifacts, sums), nil
}

// TarballName is the name of a release tarball, without .tar.gz: also the
// one directory it holds.
func TarballName(version, arch string) string {
	return "slowlab_" + version + "_linux_" + arch
}

// tarballDocs are the documents a release tarball ships beside the
// binaries: the license, the README and changelog, and the pages they and
// the runbook link to (CONTRIBUTING.md, the exporter's and dashboards'
// READMEs, docs/*.md), so that every link of a shipped page resolves in
// the tarball (checkLinks); patterns for glob.
var tarballDocs = []string{"LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "exporter/README.md", "dashboards/README.md", "docs/*.md"}

// writeTarball writes out/TarballName.tar.gz: the binaries, tarballDocs
// and the assets under one directory of that name, owned by root, with
// fixedTime on every entry. It refuses a page linking to a file it does
// not ship.
func writeTarball(root, out, version, arch string, bins binaries) (string, error) {
	name := TarballName(version, arch)
	files := []asset{{bins.lab, "slowlab"}, {bins.exporter, "slowlab-exporter"}}
	documents, err := glob(root, tarballDocs...)
	if err != nil {
		return "", err
	}
	shared, err := assets(root)
	if err != nil {
		return "", err
	}
	files = append(append(files, documents...), shared...)
	if err := checkLinks("the tarball (tarballDocs)", files); err != nil {
		return "", err
	}
	path := filepath.Join(out, name+".tar.gz")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	if err := errors.Join(writeTar(tw, name, files), tw.Close(), zw.Close(), f.Close()); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, nil
}

// writeTar writes files to tw under dir/, each directory before its
// files; the binaries are executable.
func writeTar(tw *tar.Writer, dir string, files []asset) error {
	seen := map[string]bool{}
	header := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: fixedTime}
	}
	for _, a := range files {
		rel := dir + "/" + a.rel
		for d := dir; ; {
			if !seen[d] {
				seen[d] = true
				if err := tw.WriteHeader(header(d+"/", 0o755, tar.TypeDir, 0)); err != nil {
					return err
				}
			}
			next, _, ok := strings.Cut(strings.TrimPrefix(rel, d+"/"), "/")
			if !ok {
				break
			}
			d += "/" + next
		}
		b, err := os.ReadFile(a.src)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if a.rel == "slowlab" || a.rel == "slowlab-exporter" {
			mode = 0o755
		}
		if err := tw.WriteHeader(header(rel, mode, tar.TypeReg, int64(len(b)))); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// writeSums writes out/SumsFile: a line "HEX  NAME" for each of paths (all
// in out), sorted by name, as sha256sum writes and -c reads it.
func writeSums(out string, paths []string) (string, error) {
	var b strings.Builder
	for _, p := range slices.SortedFunc(slices.Values(paths), func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) }) {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(data), filepath.Base(p))
	}
	path := filepath.Join(out, SumsFile)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// unresolvedLinks returns, as "PAGE: link TARGET", the relative links of
// the Markdown pages among files (contents by path, slash-separated, from
// the tarball's directory) that name neither one of files nor a directory
// holding one.
func unresolvedLinks(files map[string][]byte) []string {
	dirs := map[string]bool{}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, l := range mdlink.Relative(string(files[name])) {
			target := path.Clean(path.Join(path.Dir(name), l.Path))
			if _, ok := files[target]; !ok && !dirs[target] {
				out = append(out, name+": link "+l.Target)
			}
		}
	}
	return out
}

// checkLinks refuses a package (what, e.g. "the tarball") of files whose
// Markdown pages link to something it does not ship.
func checkLinks(what string, files []asset) error {
	contents := map[string][]byte{}
	for _, a := range files {
		contents[a.rel] = nil
		if strings.HasSuffix(a.rel, ".md") {
			b, err := os.ReadFile(a.src)
			if err != nil {
				return err
			}
			contents[a.rel] = b
		}
	}
	if bad := unresolvedLinks(contents); len(bad) > 0 {
		return fmt.Errorf("%s's pages link to files it does not ship:\n%s", what, strings.Join(bad, "\n"))
	}
	return nil
}
