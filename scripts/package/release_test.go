package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// testVersion is the version the tests' release is built as.
const testVersion = "9.8.7"

var (
	relOnce      sync.Once
	relDir       string
	relArtifacts []string
	relErr       error
)

// releaseOnce builds the release once for the tests, for both of
// ReleaseArches, into a temp dir, and returns the dir.
func releaseOnce(t *testing.T) string {
	t.Helper()
	slowlabtest.EndToEnd(t, "it cross-compiles both binaries for two architectures")
	relOnce.Do(func() {
		if relDir, relErr = os.MkdirTemp("", "slowlab-release-test-"); relErr == nil {
			relArtifacts, relErr = release("../..", relDir, testVersion, nil)
		}
	})
	if relErr != nil {
		t.Fatal(relErr)
	}
	return relDir
}

// elfMachines are the ELF machine of each release architecture's binaries.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// wantArtifacts are the names of a release's artifacts, sorted.
func wantArtifacts(version string) []string {
	names := []string{SumsFile}
	for _, arch := range ReleaseArches {
		names = append(names, TarballName(version, arch)+".tar.gz",
			ExporterPackage+"_"+version+"_"+arch+".deb", LabPackage+"_"+version+"_"+arch+".deb")
	}
	slices.Sort(names)
	return names
}

// verifySums checks dir's SumsFile as sha256sum -c does, and more: one
// "HEX  NAME" line for every other file of dir, each HEX the file's.
func verifySums(dir string) error {
	f, err := os.Open(filepath.Join(dir, SumsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	listed := map[string]bool{}
	var errs []error
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" || strings.Contains(name, "/") || listed[name] {
			errs = append(errs, fmt.Errorf("%s: line %q: want one \"HEX  NAME\" line a file", SumsFile, sc.Text()))
			continue
		}
		listed[name] = true
		b, err := os.ReadFile(filepath.Join(dir, name))
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); err != nil || got != sum {
			errs = append(errs, fmt.Errorf("%s: SHA-256 %s (%v), %s says %s", name, got, err, SumsFile, sum))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != SumsFile && !listed[e.Name()] {
			errs = append(errs, fmt.Errorf("%s: not in %s", e.Name(), SumsFile))
		}
	}
	return errors.Join(append(errs, sc.Err())...)
}

// A release is exactly its artifacts, and SHA256SUMS holds the hash of
// every other one, as verifySums and sha256sum -c check. Both fail on a
// copy with a byte of a tarball changed, and verifySums on one with an
// artifact left out of SHA256SUMS.
func TestReleaseArtifactsAndSums(t *testing.T) {
	dir := releaseOnce(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := wantArtifacts(testVersion); !slices.Equal(names, want) {
		t.Errorf("release artifacts %v, want %v", names, want)
	}
	var returned []string
	for _, a := range relArtifacts {
		returned = append(returned, filepath.Base(a))
	}
	if slices.Sort(returned); !slices.Equal(returned, names) {
		t.Errorf("release returned %v, wrote %v", returned, names)
	}
	if err := verifySums(dir); err != nil {
		t.Errorf("verifySums: %v", err)
	}
	sha256sum := slowlabtest.RequireTool(t, "sha256sum")
	check := func(dir string) ([]byte, error) {
		cmd := exec.Command(sha256sum, "-c", SumsFile)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := check(dir); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}

	// A copy with one byte of the amd64 tarball changed.
	bad := t.TempDir()
	tarball := TarballName(testVersion, "amd64") + ".tar.gz"
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == tarball {
			b[len(b)/2] ^= 0xff
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := verifySums(bad); err == nil || !strings.Contains(err.Error(), tarball) {
		t.Errorf("verifySums with %s changed: %v, want it named", tarball, err)
	}
	if out, err := check(bad); err == nil || !strings.Contains(string(out), tarball+": FAILED") {
		t.Errorf("sha256sum -c with %s changed: %v\n%s; want it FAILED", tarball, err, out)
	}
	// The same copy with the tarball left out of the list.
	sums, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(sums), "\n") {
		if !strings.HasSuffix(line, "  "+tarball+"\n") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(filepath.Join(bad, SumsFile), []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifySums(bad); err == nil || !strings.Contains(err.Error(), tarball+": not in") {
		t.Errorf("verifySums with %s unlisted: %v, want it named", tarball, err)
	}
}

// tarFiles reads a .tar.gz: its regular files' contents and modes by name,
// and the names of every entry.
func tarFiles(path string) (files map[string][]byte, modes map[string]int64, names []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, nil, err
	}
	files, modes = map[string][]byte{}, map[string]int64{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, modes, names, nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
		names = append(names, h.Name)
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				return nil, nil, nil, err
			}
			modes[h.Name] = h.Mode
		}
	}
}

// checkTarball checks a release tarball for arch: one directory named as
// the tarball, holding exactly the binaries (executable, built for arch),
// LICENSE, README.md, CHANGELOG.md, the pages they link to
// (CONTRIBUTING.md, exporter/README.md, dashboards/README.md and every
// docs/*.md) and shareFiles, each as in the repository at root.
func checkTarball(path, version, arch, root string) error {
	files, modes, names, err := tarFiles(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	top := TarballName(version, arch) + "/"
	var errs []error
	for _, n := range names {
		if !strings.HasPrefix(n, top) {
			errs = append(errs, fmt.Errorf("%s: entry %s outside %s", path, n, top))
		}
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) < 10 {
		return fmt.Errorf("%s: docs/*.md: %d pages (%v), want the docs", root, len(pages), err)
	}
	docs := []string{"LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "exporter/README.md", "dashboards/README.md"}
	for _, p := range pages {
		docs = append(docs, "docs/"+filepath.Base(p))
	}
	docs = append(docs, shareFiles...)
	var want []string
	for _, f := range append([]string{"slowlab", "slowlab-exporter"}, docs...) {
		want = append(want, top+f)
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		errs = append(errs, fmt.Errorf("%s: files %v, want %v", path, got, want))
	}
	for _, bin := range []string{"slowlab", "slowlab-exporter"} {
		if m, err := elfMachine(files[top+bin]); err != nil || m != elfMachines[arch] || modes[top+bin] != 0o755 {
			errs = append(errs, fmt.Errorf("%s: %s: ELF machine %v (%v), mode %o; want %v, 0755", path, bin, m, err, modes[top+bin], elfMachines[arch]))
		}
	}
	for _, f := range docs {
		if want, err := os.ReadFile(filepath.Join(root, f)); err != nil || !bytes.Equal(files[top+f], want) {
			errs = append(errs, fmt.Errorf("%s: %s differs from the repository's (%v)", path, f, err))
		}
	}
	return errors.Join(errs...)
}

// elfMachine is the machine an ELF file is built for.
func elfMachine(b []byte) (elf.Machine, error) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	return f.Machine, nil
}

// Each tarball holds exactly its files in its one directory, its binaries
// built for its architecture (debug/elf); the amd64 slowlab prints the
// release's version. The check fails on the arm64 tarball relabelled
// amd64 (its binaries' machine), and on one without LICENSE.
func TestReleaseTarballs(t *testing.T) {
	dir := releaseOnce(t)
	for _, arch := range ReleaseArches {
		if err := checkTarball(filepath.Join(dir, TarballName(testVersion, arch)+".tar.gz"), testVersion, arch, "../.."); err != nil {
			t.Error(err)
		}
	}
	// The arm64 tarball relabelled amd64: only its binaries' machine is
	// wrong; and the amd64 one without LICENSE.
	amd, arm := TarballName(testVersion, "amd64"), TarballName(testVersion, "arm64")
	relabelled := filepath.Join(t.TempDir(), amd+".tar.gz")
	rewriteTarball(t, filepath.Join(dir, arm+".tar.gz"), relabelled, func(h *tar.Header) bool {
		h.Name = strings.Replace(h.Name, arm, amd, 1)
		return true
	})
	err := checkTarball(relabelled, testVersion, "amd64", "../..")
	if err == nil || strings.Count(err.Error(), "ELF machine EM_AARCH64") != 2 || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("the arm64 tarball relabelled amd64: %v; want its two binaries' machine refused, nothing else", err)
	}
	noLicense := filepath.Join(t.TempDir(), amd+".tar.gz")
	rewriteTarball(t, filepath.Join(dir, amd+".tar.gz"), noLicense, func(h *tar.Header) bool { return h.Name != amd+"/LICENSE" })
	if err := checkTarball(noLicense, testVersion, "amd64", "../.."); err == nil || !strings.Contains(err.Error(), "want [") {
		t.Errorf("a tarball without LICENSE: %v; want its file list refused", err)
	}

	if runtime.GOARCH != "amd64" {
		t.Skipf("%s machine: the amd64 binary does not run here", runtime.GOARCH)
	}
	files, _, _, err := tarFiles(filepath.Join(dir, amd+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, bin := range []string{"slowlab", "slowlab-exporter"} {
		if err := os.WriteFile(filepath.Join(tmp, bin), files[amd+"/"+bin], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for bin, args := range map[string][]string{"slowlab": {"version"}, "slowlab-exporter": {"--version"}} {
		out, err := exec.Command(filepath.Join(tmp, bin), args...).CombinedOutput()
		if want := bin + ", version " + testVersion + " "; err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s %s: %v %q, want %q", bin, args[0], err, out, want)
		}
	}
}

// Every relative link of every Markdown page a tarball ships (the
// README's to docs/ and the exporter's README, the runbook's to the
// dashboards' README) names a file or a directory inside the tarball. The
// amd64 tarball without docs/proxies.md fails, naming the README's link.
func TestReleaseTarballLinksResolve(t *testing.T) {
	dir := releaseOnce(t)
	shipped := func(arch string) map[string][]byte {
		files, _, _, err := tarFiles(filepath.Join(dir, TarballName(testVersion, arch)+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		top := TarballName(testVersion, arch) + "/"
		rel := map[string][]byte{}
		for name, b := range files {
			rel[strings.TrimPrefix(name, top)] = b
		}
		return rel
	}
	for _, arch := range ReleaseArches {
		files := shipped(arch)
		pages := 0
		for name := range files {
			if strings.HasSuffix(name, ".md") {
				pages++
			}
		}
		if bad := unresolvedLinks(files); len(bad) > 0 || pages < 3 {
			t.Errorf("%s tarball: %d Markdown pages; links naming nothing in it:\n%s", arch, pages, strings.Join(bad, "\n"))
		}
	}
	files := shipped("amd64")
	delete(files, "docs/proxies.md")
	if bad := unresolvedLinks(files); !slices.Contains(bad, "README.md: link docs/proxies.md") {
		t.Errorf("the amd64 tarball without docs/proxies.md: unresolved %q; want the README's link named", bad)
	}
}

// rewriteTarball copies the .tar.gz src to dst, each entry's header as
// edit leaves it, without the entries edit returns false for.
func rewriteTarball(t *testing.T, src, dst string, edit func(h *tar.Header) bool) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if edit(h) {
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(tw, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(tw.Close(), zw.Close(), os.WriteFile(dst, buf.Bytes(), 0o644)); err != nil {
		t.Fatal(err)
	}
}

// checkDeb checks a release .deb of package name for arch: its control
// fields (dpkg-deb -f), its files (wantDebFiles) and its binary's ELF
// machine.
func checkDeb(dpkgDeb, deb, name, version, arch string) error {
	out, err := exec.Command(dpkgDeb, "-f", deb, "Package", "Version", "Architecture").Output()
	if err != nil {
		return fmt.Errorf("dpkg-deb -f %s: %w", deb, err)
	}
	var errs []error
	if want := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\n", name, version, arch); string(out) != want {
		errs = append(errs, fmt.Errorf("%s: dpkg-deb -f: %q, want %q", deb, out, want))
	}
	if files, err := debFiles(dpkgDeb, deb); err != nil || !slices.Equal(files, wantDebFiles(name)) {
		errs = append(errs, fmt.Errorf("%s: files %v (%v), want %v", deb, files, err, wantDebFiles(name)))
	}
	tree, err := os.MkdirTemp("", "slowlab-deb-x-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	if out, err := exec.Command(dpkgDeb, "-x", deb, tree).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %v: %s", deb, err, out)
	}
	bin := map[string]string{ExporterPackage: ExporterBinPath, LabPackage: BinPath}[name]
	b, err := os.ReadFile(filepath.Join(tree, bin))
	if m, merr := elfMachine(b); err != nil || merr != nil || m != elfMachines[arch] {
		errs = append(errs, fmt.Errorf("%s: %s: ELF machine %v (%v, %v), want %v", deb, bin, m, err, merr, elfMachines[arch]))
	}
	return errors.Join(errs...)
}

// Each architecture's two .debs say that architecture (dpkg-deb -f ARCH.deb
// Architecture) and the release's version, hold the files build's do, and
// their binaries are built for it. An amd64 .deb checked as arm64 fails.
func TestReleaseDebs(t *testing.T) {
	dir := releaseOnce(t)
	dpkgDeb := slowlabtest.RequireTool(t, "dpkg-deb")
	for _, arch := range ReleaseArches {
		for _, name := range []string{ExporterPackage, LabPackage} {
			if err := checkDeb(dpkgDeb, filepath.Join(dir, name+"_"+testVersion+"_"+arch+".deb"), name, testVersion, arch); err != nil {
				t.Error(err)
			}
		}
	}
	amd := filepath.Join(dir, ExporterPackage+"_"+testVersion+"_amd64.deb")
	if err := checkDeb(dpkgDeb, amd, ExporterPackage, testVersion, "arm64"); err == nil ||
		!strings.Contains(err.Error(), "Architecture: amd64") || !strings.Contains(err.Error(), "ELF machine EM_X86_64") {
		t.Errorf("the amd64 .deb checked as arm64: %v; want its architecture and machine refused", err)
	}
}

// A release refuses a version that is not X.Y.Z, and an output directory
// that holds anything, before it builds.
func TestReleaseRefuses(t *testing.T) {
	out := t.TempDir()
	for _, v := range []string{"", "v1.2.3", "1.2", "1.2.3-rc1", "01.2.3", "1.2.3 "} {
		if _, err := release("../..", out, v, nil); err == nil || !strings.Contains(err.Error(), "X.Y.Z") {
			t.Errorf("version %q: %v, want refused", v, err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "old.deb"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := release("../..", out, "1.2.3", nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a directory holding old.deb: %v, want refused", err)
	}
}

// writeTarball refuses a tree whose README links to a page the tarball
// does not ship (docs/new.md, outside tarballDocs), naming the link, and
// writes nothing; a link to a shipped page's section or to a shipped
// directory is fine.
func TestTarballRefusesUnshippedLink(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	if _, err := glob("../..", "no-such-dir/*.md"); err == nil || !strings.Contains(err.Error(), "no no-such-dir/*.md") {
		t.Errorf("glob of a pattern matching nothing: %v, want it named", err)
	}
	all, err := glob("../..", append(slices.Clone(tarballDocs), "dashboards/*.json", "dashboards/provisioning/*", "alerts/*")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		b, err := os.ReadFile(a.src)
		if err != nil {
			t.Fatal(err)
		}
		if a.rel == "README.md" {
			b = append(b, "\nSee [the new page](docs/new.md) and [its section](docs/proxies.md#nginx), [the rules](alerts/).\n"...)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(a.rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, a.rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "bin")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	bins := binaries{lab: bin, exporter: bin}
	_, err = writeTarball(root, out, "1.2.3", "amd64", bins)
	if err == nil || !strings.Contains(err.Error(), "README.md: link docs/new.md") || strings.Count(err.Error(), ": link ") != 1 {
		t.Errorf("a README linking to docs/new.md: %v; want that link refused, no other", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("refused, it wrote %d files to out", len(entries))
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "new.md"), []byte("# New\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeTarball(root, out, "1.2.3", "amd64", bins); err != nil {
		t.Errorf("with docs/new.md: %v", err)
	}
}

// TestDebRefusesUnshippedLink: the exporter package ships the dashboards
// and rules under ShareDir; its pages' links resolve there (the repo's
// own), and a runbook linking to a page it does not ship (the
// dashboards' README, as the runbook once did) is refused before a
// package is written.
func TestDebRefusesUnshippedLink(t *testing.T) {
	shared, err := assets("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkLinks(ExporterPackage, shared); err != nil {
		t.Errorf("the repository's shared files: %v", err)
	}
	root, out := t.TempDir(), t.TempDir()
	for _, a := range shared {
		b, err := os.ReadFile(a.src)
		if err != nil {
			t.Fatal(err)
		}
		if a.rel == "alerts/runbook.md" {
			b = append(b, "\nSee [the dashboards](../dashboards/README.md).\n"...)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(a.rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, a.rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = writeDebs(root, out, t.TempDir(), "1.2.3", "amd64", binaries{})
	if err == nil || !strings.Contains(err.Error(), "alerts/runbook.md: link ../dashboards/README.md") || strings.Count(err.Error(), ": link ") != 1 {
		t.Errorf("a runbook linking to the dashboards' README: %v; want that link refused, no other", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("refused, it wrote %d files to out", len(entries))
	}
}

// TestRevisionMarksDirtyTree: the revision stamped into the binaries is
// the commit (a real git repository's HEAD) while the tracked files are
// that commit's, with "-dirty" once one differs (an untracked file does
// not count), and nothing outside git.
func TestRevisionMarksDirtyTree(t *testing.T) {
	gitBin := slowlabtest.RequireTool(t, "git")
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := revision(dir); got != "" {
		t.Errorf("outside git: revision %q, want none", got)
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "a")
	git("commit", "-q", "-m", "a")
	head := git("rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(dir, "untracked"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := revision(dir); got != head {
		t.Errorf("clean tree (one untracked file): revision %q, want %q", got, head)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := revision(dir); got != head+"-dirty" {
		t.Errorf("a tracked file changed: revision %q, want %q", got, head+"-dirty")
	}
}
