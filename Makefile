# lockbench: build, test, bench, lint.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/lockbench/lockbench/cli.version=$(VERSION)
GO ?= go

.PHONY: build test test-short bench bench-ratios lint clean screenshot dockerd docker-images hog-proof

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/lockbench ./cmd/lockbench

# The full suite: unit tests, the locks against the embedded server and a
# real redis-server (skipped when redis-server is missing, unless
# LOCKBENCH_REQUIRE_REDIS=1), the end-to-end sales, and the report in
# headless Chromium (skipped when chromium is missing, unless
# LOCKBENCH_REQUIRE_BROWSER=1), and the docker backend (skipped without a
# Docker daemon or the image $LOCKBENCH_REDIS_IMAGE, unless
# LOCKBENCH_REQUIRE_DOCKER=1). internal/testlog runs go test -json and
# prints what go test prints (failures, each package's ok or FAIL line),
# then every skipped test with its reason; it exits as go test did (built
# first, as go run would turn every failure into exit 1). go test starts
# the packages in the order given, two at a time on two cores: the truth
# table, the longest by far, first, so that every other package runs
# beside it instead of before it (CI's time is the table's, not the sum).
TESTLOG := bin/testlog
LONGEST := ./matrix/ ./cli/ ./faults/ ./locks/
test: lint
	$(GO) build -o $(TESTLOG) ./internal/testlog
	GO=$(GO) $(TESTLOG) -count=1 -timeout 40m $(LONGEST) ./...

# The developer's suite, a few minutes: -short skips the long end-to-end
# sales, truth tables and fault sweeps (each says so in the skipped list).
test-short:
	$(GO) build -o $(TESTLOG) ./internal/testlog
	GO=$(GO) $(TESTLOG) -count=1 -short -timeout 10m ./...

# The README's picture of a report, taken by the browser test in headless
# Chromium (needs chromium on PATH).
screenshot:
	LOCKBENCH_REQUIRE_BROWSER=1 $(GO) test -count=1 -run '^TestReportInBrowser$$' ./cli/ -screenshot

# A dockerd for the docker backend, with its bridge and iptables off,
# unless one runs; then lockbench/redis:local, lockbench/zookeeper:local,
# lockbench/mariadb:local, lockbench/etcd:local and lockbench/postgres:local,
# built from Debian's packages, for machines that cannot pull redis:7,
# zookeeper:3.9, mariadb:11, etcd's image and postgres:15.
dockerd:
	scripts/dockerd.sh

docker-images: dockerd
	scripts/docker-images.sh

# Speed and memory figures, measured: see scripts/bench.sh.
bench: build
	$(GO) build -o bin/scriptbench ./internal/scriptbench
	$(GO) test -run '^$$' -bench . -benchtime 3x ./checker/
	scripts/bench.sh

# Issue 27's figures only, each a ratio against its anchor measured beside
# it (redis-benchmark, the ramp, redis-server): REPEATS=3, BIG=1000000.
bench-ratios: build
	$(GO) build -o bin/scriptbench ./internal/scriptbench
	RATIOS=only scripts/bench.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin

# The busy-machine proof: the default run, the truth table (embedded and
# redis-server, seeds 1-3), a gate run and the customlock example, once
# quiet and once beside stress-ng --cpu 8; counts the verdicts that
# differ, the inconclusive ones and the runs thrown away. QUICK=1: a small
# part, as CI runs it.
hog-proof:
	scripts/hog-proof.sh
