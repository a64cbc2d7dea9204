# cdc-relay — the two commands of the quick start are `make demo` and `make test`.

GO       ?= go
BIN      ?= bin/cdc-relay
FUZZTIME ?= 30s
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.Version=$(VERSION)
# Packages with concurrency run under the race detector; e2e drives the
# built binary against a real PostgreSQL and Kafka over TCP.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /e2e)

# PG=13 … 18 runs a target's tests on that PostgreSQL version
# (CDC_RELAY_TEST_PG; scripts/pgversion.sh fetches it); unset, Debian's.
PG ?=
ifneq ($(PG),)
export CDC_RELAY_TEST_PG := $(PG)
endif
# The packages whose tests start a PostgreSQL, and the e2e tests of the
# core, faults and failover that `make test-pg` runs on each version.
PG_PKGS = ./migrations/ ./preflight/ ./replication/ ./relay/ ./status/ ./setup/ \
	./writeback/ ./poller/ ./retention/ ./checkpoint/ ./cmd/cdc-relay/ ./examples/ \
	./internal/pgtemp/ ./internal/pgconnect/ ./internal/pgerr/
PG_CORE_TESTS = ^(TestKill9LosesNothing|TestPostgresRestartMidStream|TestSIGTERMRestartDeliversEverythingOnce|TestStandbyTakesOverWhenLeaderDies|TestSlotGapRefusedThenRecovered|TestLostSlotIsReportedNotSkipped|TestExactlyOnceSurvivesKillAndStop|TestRollbacksAndSavepointsProduceNothing|TestEventsBeforeTheFirstRunAreKept|TestStatusColumnSwitchOver|TestRecover.*|TestPrimaryFailover.*)$$

.PHONY: all build demo test test-kafka test-pg bench unit fuzz e2e lint deps deps-kafka deps-pg clean

all: build

# Each target installs only what it needs (scripts/deps.sh says what each
# name is); cgo stays on wherever -race is used.
## deps: what `make test` needs: PostgreSQL's server binaries, kcat, gcc, promtool (and PostgreSQL $(PG) when PG is set)
deps: deps-pg
	@./scripts/deps.sh postgres kcat gcc promtool

## deps-pg: PostgreSQL $(PG)'s server binaries, fetched once with Maven (scripts/pgversion.sh); nothing when PG is unset
deps-pg:
	@if [ -n "$(PG)" ]; then ./scripts/deps.sh postgres && ./scripts/pgversion.sh $(PG) >/dev/null; fi

## deps-kafka: Java and Maven, for the real Apache Kafka broker
deps-kafka:
	@./scripts/deps.sh kafka

## build: the static binary, bin/cdc-relay
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/cdc-relay

## demo: the relay on a throwaway PostgreSQL and an in-process Kafka broker
demo: build
	@./scripts/deps.sh postgres
	./$(BIN) demo

## test: lint, unit tests with -race, the decoder's fuzz target, then the end-to-end suite
test: deps lint unit fuzz e2e

## test-kafka: the end-to-end suite against a real Apache Kafka broker (Java + Maven)
test-kafka: deps deps-kafka
	CDC_RELAY_TEST_KAFKA=apache CGO_ENABLED=1 $(GO) test -count=1 -timeout 30m ./e2e/

## test-pg: on PostgreSQL $(PG) (make test-pg PG=17): the unit tests of the packages that use PostgreSQL, then the e2e tests of PG_CORE_TESTS
test-pg: deps
	@if [ -z "$(PG)" ]; then echo "make test-pg: name the version, e.g. make test-pg PG=17" >&2; exit 2; fi
	@echo "test-pg: $$($$(./scripts/pgversion.sh $(PG))/postgres --version)"
	CGO_ENABLED=1 $(GO) test -race -count=1 $(PG_PKGS)
	CGO_ENABLED=1 $(GO) test -count=1 -timeout 20m -run '$(PG_CORE_TESTS)' ./e2e/

## bench: drain, latency, memory and polling-baseline benchmarks (about 20 minutes)
bench: deps deps-kafka
	cd e2e/bench && $(GO) run . -apache -plot ../../docs/latency.png

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd e2e/bench && $(GO) vet ./...

## unit: unit tests with -race (some start a throwaway PostgreSQL)
unit: deps-pg
	@./scripts/deps.sh postgres gcc promtool
	CGO_ENABLED=1 $(GO) test -race -count=1 $(UNIT_PKGS)

## fuzz: the decoder's fuzz target for FUZZTIME (30s); a failing input is
# written to decoder/testdata/fuzz/FuzzDecode/, to be kept there as a seed
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=$(FUZZTIME) ./decoder/

## e2e: the end-to-end suite on kfake (it builds the relay with -race)
e2e: deps-pg
	@./scripts/deps.sh postgres kcat gcc
	CGO_ENABLED=1 $(GO) test -count=1 -timeout 20m ./e2e/

clean:
	rm -rf bin
