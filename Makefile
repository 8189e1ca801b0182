# zkbridge — build, run and test. `make test` does all set-up on a fresh
# machine (it installs the real ZooKeeper the compat suite compares with).
GO      ?= go
BIN     := bin/zkbridge
PKGS    := ./...
FUZZTIME ?= 4s

.PHONY: all build run test deps vet fmt-check unit compat fuzz bench proto clean screenshots console-bench chaos migrate-bench bench-dims tenants-bench compat-relay

all: build

build:
	$(GO) build -o $(BIN) .

# One node on the embedded default: 127.0.0.1:2181, data in ./zkbridge-data.
run: build
	./$(BIN) server

deps:
	bash scripts/install-zookeeper.sh
	$(GO) mod download

# build too: vet compiles test files with their package, so it misses a
# non-test file that uses a helper defined only in a _test.go file.
vet:
	$(GO) build $(PKGS)
	$(GO) vet $(PKGS)

fmt-check:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi

unit:
	$(GO) test -count=1 -timeout 20m $(PKGS)

# The differential suite alone (real ZooKeeper vs zkbridge, and ZooKeeper vs
# itself); `zkbridge compat` runs it against any two servers (docs/compat.md).
compat: deps
	$(GO) test -count=1 -timeout 15m -run 'TestCompat|TestClient' ./compat-tests/

# The differential suite against a tenant reached by client certificate
# alone (no SNI, as kazoo 2.8) through a node that relays it to the
# hosting node over the peers' TLS; ZooKeeper on its TLS port, same
# certificate (docs/tenants.md).
compat-relay: deps
	ZKBRIDGE_RELAY_COMPAT=1 $(GO) test -count=1 -v -timeout 15m -run '^TestCompatTenantRelayed$$' ./compat-tests/

test: deps vet fmt-check unit

# The fault suite's long run (faults/; its short run is part of unit):
# every nemesis again and again for DURATION against zkbridge, and once per
# pass against a real ZooKeeper 3.8 for comparison. Prints the table and the
# unavailability summary (also in chaos-artifacts/summary.txt, rewritten
# after every pass); failing histories' visualisations go to
# chaos-artifacts/.
DURATION ?= 30m
chaos: deps
	FAULTS_DURATION=$(DURATION) FAULTS_ZOOKEEPER=1 FAULTS_ARTIFACTS=$(CURDIR)/chaos-artifacts \
	  $(GO) test -count=1 -v -timeout 0 -run '^(TestFaultsShort|TestResumedFollowerDoesNotDisruptTheLeader|TestRestartedFollowerDoesNotDisruptTheLeader)$$' ./faults/

# Every fuzz target, a few seconds each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

# The web console's screenshots in docs/images/ (docs/console.md), taken by
# its browser test (headless Chromium against a 3-node cluster).
screenshots: deps
	ZKBRIDGE_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -count=1 -timeout 5m -run '^TestConsoleInBrowser$$' ./server/

# The console's page loads on a 100k-znode tree and a 1M-child node.
console-bench:
	ZKBRIDGE_CONSOLE_BENCH=1 $(GO) test -count=1 -timeout 20m -v -run '^TestConsolePageLoadOnLargeTrees$$' ./server/

bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# Issue 36's scale dimensions beside a real ZooKeeper 3.8, alternated
# (docs/performance.md#scale-sessions-watches-values-children): sessions
# and a reconnect storm, session churn, watches, large values, wide nodes;
# DIMS picks some (e.g. DIMS="sessions churn"; bigtree is a long one).
DIMS ?=
bench-dims: deps
	bash scripts/bench-dims.sh $(DIMS)

# Migration at full size (docs/migration.md#performance): import and
# convert of MIGRATE_ZNODES znodes into a 3-process cluster (znodes/s, CPU,
# peak RSS; ZooKeeper's own reload time beside convert), then TestMigrate
# with a 100k-znode mix (`make test` runs it with 5k).
MIGRATE_ZNODES ?= 1000000
# The tenant benchmarks (docs/tenants.md): memory per idle tenant and the
# start-up of 3 nodes with TENANTS tenants, aggregate writes of 1/2/4/8
# tenants vs the default tenant and a 3-node ZooKeeper, and a noisy
# neighbour's effect on another tenant's p99.
TENANTS ?= 100
# TENANT_WRITERS: the totals of outstanding writes each row of the write
# benchmark is run with (split over its tenants; ZooKeeper gets the same).
TENANT_WRITERS ?= 64,256
tenants-bench: deps
	ZKBRIDGE_TENANT_BENCH=1 ZKBRIDGE_TENANTS=$(TENANTS) ZKBRIDGE_TENANT_WRITERS=$(TENANT_WRITERS) $(GO) test -count=1 -v -timeout 60m \
	  -run '^TestTenant(Scale|Write|NoisyNeighbour)Bench$$' ./compat-tests/

migrate-bench: deps
	ZKBRIDGE_MIGRATE_BENCH=$(MIGRATE_ZNODES) ZKBRIDGE_MIGRATE_CONVERT_BENCH=$(MIGRATE_ZNODES) \
	  $(GO) test -count=1 -v -timeout 60m -run '^TestMigrate(Import|Convert)Bench$$' ./compat-tests/
	ZKBRIDGE_MIGRATE_ZNODES=100000 $(GO) test -count=1 -v -timeout 30m -run '^TestMigrate$$' ./compat-tests/

# The native API's Go code from api/zkbridge/v1/*.proto (committed): protoc
# from Debian's protobuf-compiler, the Go plugins at pinned versions.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
proto:
	@command -v protoc >/dev/null || { echo "make proto: installing protobuf-compiler"; apt-get install -y -qq protobuf-compiler >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null; }; }
	GOBIN=$(CURDIR)/bin $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(CURDIR)/bin $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(CURDIR)/bin:$$PATH protoc -I api --go_out=api --go_opt=paths=source_relative \
	  --go-grpc_out=api --go-grpc_opt=paths=source_relative api/zkbridge/v1/*.proto

clean:
	rm -rf bin
