# slowlab: `make test` is the whole suite, set-up included (see README).
GO ?= go
# Real components the tests start. Missing ones are installed with apt-get
# (root needed); with CI=true a real-component test never skips.
DEBIAN_PACKAGES ?= prometheus gunicorn python3-gevent python3-uvicorn nodejs nginx haproxy chromium systemd lintian

SHELL := /bin/bash

# The timing-sensitive tests: `make stress` runs them ten times over. A test
# is one when its body calls slowlabtest.Timing (scripts/stresstests finds
# them; no list to keep). Run it before submitting a change that touches them.
STRESS_COUNT ?= 10
SUITE_P ?= 2

.PHONY: test test-loaded cleanup suite deps check lint build fuzz bench stress package

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

deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

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
	$(GO) build -o slowlab ./cmd/slowlab

# The exporter's Debian package (binary, systemd unit, default config), built
# with nfpm: dist/slowlab-exporter_VERSION_ARCH.deb (the exporter alone, its unit
# and config) and dist/slowlab_VERSION_ARCH.deb (the lab).
package:
	$(GO) run ./scripts/package -out dist

# Short coverage-guided runs of every fuzz target (the seeds run in `test`).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
