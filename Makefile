# Direct Line 3.0 service: build, run and test targets. `make run` and `make test` are the two
# commands a fresh checkout needs; both install what they use.

GO       ?= go
NPM      ?= npm
# An execution count, not a duration: a duration races the fuzz coordinator's deadline on a busy
# machine and fails with "context deadline exceeded" although nothing was found (golang/go#75804).
FUZZTIME ?= 20000x
# ARGS are passed to the service by `make run`, e.g. make run ARGS='--addr 127.0.0.1:3001'.
ARGS     ?=

DEMO_MODULES := webchat-demo/node_modules/.package-lock.json
# Debian's Chromium drives the browser tests; nothing downloads a browser of its own.
CHROMIUM ?= /usr/bin/chromium

.PHONY: run build test test-go test-fuzz test-node test-browser deps vet bench bench-quick

run: deps
	$(GO) run ./cmd/directline $(ARGS)

build:
	$(GO) build -o bin/ ./cmd/...

deps: $(DEMO_MODULES)

$(DEMO_MODULES): webchat-demo/package.json webchat-demo/package-lock.json
	$(NPM) ci --prefix webchat-demo --no-audit --no-fund

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './webchat-demo/node_modules/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

test: deps vet test-go test-fuzz test-node test-browser

test-go:
	DIRECTLINE_NODE_TESTS=1 $(GO) test -race -count=1 ./...

# Every fuzz target runs FUZZTIME executions on top of its seed corpus (which test-go already ran).
test-fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$fz"; \
	    $(GO) test -run '^$$' -fuzz "^$$fz$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

test-node: deps
	DIRECTLINE_NODE_TESTS=1 $(NPM) --prefix webchat-demo run --if-present test:node

$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

test-browser: deps $(CHROMIUM)
	CHROMIUM_PATH=$(CHROMIUM) $(NPM) --prefix webchat-demo run test:browser

# The performance targets (docs/BENCHMARKS.md, "Targets"): about half an hour, not part of make test.
bench: deps
	$(GO) run ./cmd/dlbench/suite --profile $${TMPDIR:-/tmp}/directline-bench-profiles

# Checks the runner in a few minutes; its figures say nothing, so they go to a file of their own
# instead of docs/BENCHMARKS.md.
bench-quick: deps
	$(GO) run ./cmd/dlbench/suite --quick --out $${TMPDIR:-/tmp}/directline-bench-quick.md --profile $${TMPDIR:-/tmp}/directline-bench-quick-profiles
	@echo "make bench-quick: tables in $${TMPDIR:-/tmp}/directline-bench-quick.md"
