# slowlab: `make test` is the whole suite, set-up included (see README).
GO ?= go
# Real components the tests start. Missing ones are installed with apt-get
# (root needed); with CI=true a real-component test never skips.
DEBIAN_PACKAGES ?= prometheus gunicorn python3-gevent python3-uvicorn nodejs node-ws nginx haproxy apache2 caddy chromium systemd lintian

SHELL := /bin/bash

# The timing-sensitive tests: `make stress` runs them ten times over. A test
# is one when its body calls slowlabtest.Timing (scripts/stresstests finds
# them; no list to keep). Run it before submitting a change that touches them.
STRESS_COUNT ?= 10
SUITE_P ?= 2

.PHONY: test test-loaded cleanup suite deps check lint build fuzz bench stress package release

test: deps lint cleanup suite

# The whole suite again, with a CPU hog on every core at nice 19 beside it
# (scripts/with-load.sh): what a shared, loaded CI machine does to timing.
# LOAD_NICE=0 makes the hog take half of every core.
test-loaded: deps lint cleanup
	scripts/with-load.sh $(MAKE) --no-print-directory suite

# Remove the cgroups a killed earlier session left behind (as root; a
# cgroup that still holds processes is reported, never emptied).
cleanup:
	@if [ "$$(id -u)" = 0 ] && [ -d /sys/fs/cgroup ]; then \
	  $(GO) run ./cmd/slowlab cleanup || echo "cleanup kept the cgroups above (they hold processes); the suite runs anyway"; fi

suite:
	# -p 2: two packages at a time, one per core (about 16 min on 2 cores,
	# 25 min one at a time): every end-to-end test shares the machine with
	# another package's, as it does on a loaded CI machine, and its checks
	# hold there. The summary at the end lists every skipped test and why
	# (a run without root says what did not run); pipefail keeps go test's
	# own verdict too.
	set -o pipefail; $(GO) test -json -p $(SUITE_P) -count=1 -timeout 20m ./... | $(GO) run ./scripts/testsummary

stress: deps
	set -o pipefail; tests=$$($(GO) run ./scripts/stresstests) && \
	  $(GO) test -json -p 1 -count=$(STRESS_COUNT) -timeout 120m $$tests | $(GO) run ./scripts/testsummary

# The Debian packages the real-component tests need; Jaeger (the Go tool
# of tools/jaeger, its own module so its dependencies stay out of
# slowlab's) built into the build cache for TestTracesInJaeger.
deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)
	@cd tools/jaeger && $(GO) tool -n jaeger >/dev/null
	@# The release's static builds, compiled once here for both architectures
	@# (the release and .deb tests then only link: minutes cold, seconds warm).
	@for arch in amd64 arm64; do CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath ./cmd/slowlab ./cmd/slowlab-exporter || exit 1; done

# The fast tier, for a contributor between edits: gofmt, go vet and every
# test that starts no real component (go test -short: the end-to-end tests
# skip, saying so, and no package builds the slowlab binary). make test
# runs the whole suite, these tests included, and is what CI runs.
check: lint
	$(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -buildvcs=true -o slowlab ./cmd/slowlab

# The exporter's Debian package (binary, systemd unit, default config), built
# with nfpm: dist/slowlab-exporter_VERSION_ARCH.deb (the exporter alone, its unit
# and config) and dist/slowlab_VERSION_ARCH.deb (the lab).
package:
	$(GO) run ./scripts/package -out dist

# A release: make release VERSION=X.Y.Z. For linux/amd64 and linux/arm64
# (cross-compiled, static: no C toolchain, nothing fetched) it writes to a
# fresh dist/ slowlab_VERSION_linux_ARCH.tar.gz (both binaries, LICENSE,
# README.md, CHANGELOG.md and the pages they link to (docs/, the exporter's
# and dashboards' READMEs, CONTRIBUTING.md), the dashboards and the alert
# rules with their runbook), the two
# .debs of `make package`, and SHA256SUMS over them all (cd dist &&
# sha256sum -c SHA256SUMS). The binaries print VERSION (slowlab version).
# RELEASE_ARCHES picks other architectures.
RELEASE_ARCHES ?= amd64,arm64
release:
	@if [ -z "$(VERSION)" ]; then echo "make release: give the version, as make release VERSION=X.Y.Z (e.g. VERSION=0.1.0)" >&2; exit 2; fi
	@if ! [[ "$(VERSION)" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$$ ]]; then \
	  echo "make release: VERSION=$(VERSION) is not X.Y.Z (three numbers, no leading v or zeros, e.g. VERSION=0.1.0)" >&2; exit 2; fi
	rm -rf dist
	$(GO) run ./scripts/package -release -version "$(VERSION)" -arch "$(RELEASE_ARCHES)" -out dist

# Short coverage-guided runs of every fuzz target (the seeds run in `test`).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
