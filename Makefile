# slowlab: `make test` is the whole suite, set-up included (see README).
GO ?= go
# Real components the tests start. Missing ones are installed with apt-get
# (root needed); with CI=true a real-component test never skips.
DEBIAN_PACKAGES ?= prometheus gunicorn nginx chromium

.PHONY: test deps check build fuzz bench

test: deps check
	# -p 1: packages one at a time, so timing-sensitive end-to-end tests do not
	# share two cores with another package's load.
	$(GO) test -p 1 -count=1 -timeout 20m ./...

deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -o slowlab ./cmd/slowlab

# Short coverage-guided runs of every fuzz target (the seeds run in `test`).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
