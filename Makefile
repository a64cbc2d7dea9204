# cdc-relay — the two commands of the quick start are `make demo` and `make test`.

GO       ?= go
BIN      ?= bin/cdc-relay
FUZZTIME ?= 30s
# The version stamped into the binary: scripts/version.sh's (v0.5.0 at a
# tag; its header says the rest), the commit, and whether tracked files
# were modified (git status). Only the command line overrides them
# (make build VERSION=v0.5.1 COMMIT=…): a VERSION or COMMIT in the
# environment (a CI's own, or one exported once) is ignored.
ifneq ($(origin VERSION),command line)
VERSION  := $(shell ./scripts/version.sh)
endif
ifneq ($(origin COMMIT),command line)
COMMIT   := $(shell git rev-parse -q --verify HEAD 2>/dev/null)
endif
DIRTY    := $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),true,false)
BUILDINFO = github.com/cdc-relay/cdc-relay/internal/buildinfo
LDFLAGS  := -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) \
	-X $(BUILDINFO).dirty=$(DIRTY)
# The test targets run go test through scripts/gotest: the same lines as
# plain go test (ok/FAIL per package, a failing test's output), then the
# step's time and its ten slowest tests; with CDC_RELAY_TEST_JSON_DIR set
# (CI sets it), go test's JSON of each run is kept there for the coverage
# check (make axes).
GOTEST   ?= $(GO) run ./scripts/gotest
# Packages with concurrency run under the race detector; e2e drives the
# built binary against a real PostgreSQL and Kafka over TCP.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /e2e)

# PG=13 … 18 runs the tests of any target on that PostgreSQL version
# (CDC_RELAY_TEST_PG; scripts/pgversion.sh fetches it); unset, the default
# (PG_BINDIR, else Debian's).
PG ?=
ifneq ($(PG),)
export CDC_RELAY_TEST_PG := $(PG)
endif
# The packages whose tests start a PostgreSQL, and the e2e tests of the
# core, faults and failover, that `make test-pg` runs on a version.
PG_PKGS = ./admin/ ./migrations/ ./preflight/ ./replication/ ./relay/ ./status/ ./setup/ \
	./slot/ ./pubwatch/ ./report/ ./republish/ ./relay/pipeline/ ./backfill/ \
	./writeback/ ./poller/ ./retention/ ./checkpoint/ ./cmd/cdc-relay/ ./examples/ \
	./internal/pgtemp/ ./internal/pgconnect/ ./internal/pgerr/ ./progress/ ./audit/
# Of those, the packages whose SQL or protocol differs by version (catalogs,
# replication commands, slots, standbys): CI runs these alone on 13, 14, 16
# and 17 (PG_PKGS="$(PG_VERSION_PKGS)").
PG_VERSION_PKGS = ./migrations/ ./preflight/ ./replication/ ./relay/ ./status/ ./setup/ \
	./slot/ ./pubwatch/ ./report/ ./republish/ ./relay/pipeline/ ./poller/ \
	./checkpoint/ ./internal/pgtemp/ ./writeback/
PG_CORE_TESTS = ^(TestKill9LosesNothing|TestPostgresRestartMidStream|TestSIGTERMRestartDeliversEverythingOnce|TestStandbyTakesOverWhenLeaderDies|TestSlotGapRefusedThenRecovered|TestLostSlotIsReportedNotSkipped|TestExactlyOnceSurvivesKillAndStop|TestRollbacksAndSavepointsProduceNothing|TestEventsBeforeTheFirstRunAreKept|TestStatusColumnSwitchOver|TestSwitchOverByPredicate|TestRecover.*|TestPrimaryFailover.*|TestWebhookSurvivesFailover|TestOnSlotLossRecover|TestExactlyOnceCloneStartsFromItsOwnSlot|TestExactlyOnceFailoverToAStandbyBehindKafka|TestMessagesSurviveKill9|TestMessagesNeedPostgres14|TestAdoptionHeals.*|TestExactlyOnceWriteBackSurvivesKill|TestPublicationRenamedAndBack)$$
# The e2e tests that need kfake's fault hooks (e.needKfake, e.blockProduce:
# refusing every produce, a broker that takes nothing), and the long ones
# whose subject is the relay's side only (e.relaySideOnly): on Apache
# Kafka they skip, so CI runs them on kfake (make e2e-kfake). A new test
# that calls those must be added here, or make axes fails naming it. So
# must the tests of Debezium's harness (requireDebeziumHarness), which run
# with CDC_RELAY_TEST_DEBEZIUM=1 only: make e2e-kfake sets it.
KFAKE_TESTS = ^(TestConsole|TestDebeziumOutboxRouterBytes|TestDebeziumSlotTakeover|TestConfirmNeverPassesUnackedEvent|TestDashboardSeesFaults|TestRecoverFromTheCommitTimeOfTheSavedPosition|TestStopWhileKafkaIsDown|TestTooLargeRecordParkedBeforeProduce|TestHeldKeysPastTheWholeOnes|TestFastPostgresRestartsResendLittle|TestPausedTopicAlertsWithinFiveMinutes)$$
# The axes: CI runs each test where it belongs, once (.ci/run):
#   the whole e2e suite on Apache Kafka on PostgreSQL 18 (make test-kafka PG=18);
#   KFAKE_TESTS on kfake on PostgreSQL 15 (make e2e-kfake);
#   PG_CORE_TESTS and the unit tests of PG_VERSION_PKGS on 13, 14, 16, 17 (make test-pg),
#   PG_CORE_TESTS on 15 (make e2e-pg PG=15);
#   the unit tests with -race on 15 (make unit), those of PG_PKGS on 18 (make unit-pg PG=18).
# make axes then fails naming any top-level test that passed on none.
# make test, a developer's loop, runs the whole e2e suite on kfake (no Java);
# there TestDebeziumOutboxRouterBytes and TestDebeziumSlotTakeover, which run
# Debezium in a JVM, skip: they run with the suite on Apache Kafka, and alone
# in make test-debezium.
# How many e2e tests run at once: those that mostly wait (parallel in
# e2e/harness_test.go) run side by side after the others, which run alone.
E2E_PARALLEL ?= 4
# The release's targets; CI builds linux/amd64 alone on a change, all four at a tag.
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# unit-pg's go test flags; CI runs 13, 14, 16 and 17 with -short, without
# the race detector (which runs on 15 and 18).
PG_UNIT_FLAGS ?= -race

# make kafka's broker: its port on 127.0.0.1, and a directory to keep its
# data in (empty: a temporary one, removed when it stops).
KAFKA_PORT ?= 9092
KAFKA_DIR  ?=
# scripts/kafka, which runs it and Kafka's tools: built, not go run, which
# exits 1 when Ctrl-C ends the program it runs.
KAFKA = $(GO) build -o bin/kafka ./scripts/kafka && bin/kafka -port '$(KAFKA_PORT)'

.PHONY: all help build release release-check push-image demo kafka kafka-topics kafka-consume test test-kafka test-debezium test-pg unit-pg e2e-pg e2e-kfake axes bench unit fuzz e2e k8s lint licenses docs deps deps-chromium deps-kafka deps-pg clean

all: build

## help: the make targets, each with what it does
help:
	@sed -n 's/^## \([^:]*\): /  \1\t/p' $(firstword $(MAKEFILE_LIST)) | expand -t 18

# Each target installs only what it needs (scripts/deps.sh says what each
# name is); cgo stays on wherever -race is used.
## deps: what `make test` needs: PostgreSQL's server binaries, kcat, gcc, promtool (and deps-pg)
deps: deps-pg
	@./scripts/deps.sh postgres kcat gcc promtool

## deps-pg: with PG=<major>, that PostgreSQL's server binaries, fetched once with Maven (scripts/pgversion.sh)
deps-pg:
	@if [ -n "$(PG)" ]; then ./scripts/deps.sh postgres && ./scripts/pgversion.sh $(PG) >/dev/null; fi

## deps-chromium: headless Chromium (Debian's), which the console's browser test (e2e TestConsole, on kfake) drives; e2e and e2e-kfake install it
deps-chromium:
	@./scripts/deps.sh chromium

## deps-kafka: Java and Maven, for the real Apache Kafka broker, and its jars (fetched once)
deps-kafka:
	@./scripts/deps.sh kafka
	@$(GO) run ./scripts/kafkajars >/dev/null

## build: the static binary, bin/cdc-relay
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/cdc-relay

## release: into dist/, per target of RELEASE_TARGETS (linux and darwin, amd64 and arm64) an archive of the static binary and an SBOM, the container image of the linux targets (cdc-relay-<version>-oci.tar, scripts/image), and SHA256SUMS
release:
	@./scripts/deps.sh release
	RELEASE_TARGETS='$(RELEASE_TARGETS)' VERSION='$(VERSION)' LDFLAGS='$(LDFLAGS)' ./scripts/release.sh

## release-check: make release twice, the second time from a fresh clone in another environment with an empty build cache; the same SHA256SUMS, and every file as it should be (and scripts/image's tests)
release-check:
	RELEASE_TARGETS='$(RELEASE_TARGETS)' ./scripts/release-check.sh

## push-image: with IMAGE=REGISTRY/NAME:TAG, push dist/'s container image (make release), every platform, there with the credentials of docker login or podman login
push-image:
	@if [ -z '$(IMAGE)' ]; then echo "make $@: name the image, e.g. make $@ IMAGE=ghcr.io/OWNER/cdc-relay:$(subst +,_,$(VERSION))" >&2; exit 2; fi
	@set -- dist/cdc-relay-*-oci.tar; if [ ! -f "$$1" ]; then echo "make $@: no dist/cdc-relay-<version>-oci.tar: run make release first" >&2; exit 2; fi; \
	  cd scripts/image && $(GO) run . push "$(CURDIR)/$$1" $(IMAGE)

## demo: the relay on a throwaway PostgreSQL and an in-process Kafka broker
demo: build
	@./scripts/deps.sh postgres
	./$(BIN) demo

## kafka: an Apache Kafka 4.4 broker (one KRaft node, the tests' jars) on localhost:9092 (KAFKA_PORT=9093) in the foreground until Ctrl-C, to try the relay against (--kafka-brokers localhost:9092); its data in a temporary directory, removed when it stops, or in KAFKA_DIR=DIR, kept
kafka: deps-kafka
	@$(KAFKA) -dir '$(KAFKA_DIR)'

## kafka-topics: Kafka's topic tool (kafka-topics.sh) against make kafka's broker, with ARGS: ARGS=--list, ARGS='--create --topic t1', ARGS='--describe --topic outbox.event.order'
kafka-topics: deps-kafka
	@$(KAFKA) topics $(ARGS)

## kafka-consume: with TOPIC=NAME, Kafka's console consumer on make kafka's broker: the topic from its start, each record's key and headers, until Ctrl-C (ARGS='--max-messages 1' stops sooner)
kafka-consume: deps-kafka
	@$(KAFKA) consume '$(TOPIC)' $(ARGS)

## test: lint, the Kubernetes manifests, unit tests with -race, the decoder's fuzz target, then the end-to-end suite
test: deps lint k8s unit fuzz e2e

## test-kafka: the end-to-end suite against a real Apache Kafka broker (Java + Maven), and the test broker's own TLS test
test-kafka: deps deps-kafka
	CDC_RELAY_TEST_KAFKA=apache CGO_ENABLED=1 $(GOTEST) -count=1 -parallel $(E2E_PARALLEL) -timeout 30m ./e2e/ ./internal/kafkatest/

## test-debezium: the e2e tests that run Debezium's outbox event router (scripts/debezium-harness: Java 17 + Maven, built once into ~/.cache/cdc-relay): the relay on the same rows wants the same bytes, and takes over the connector's slot under load, on kfake
test-debezium: deps-pg
	@./scripts/deps.sh postgres gcc kafka
	CDC_RELAY_TEST_DEBEZIUM=1 CGO_ENABLED=1 $(GOTEST) -count=1 -timeout 20m -run '^(TestDebeziumOutboxRouterBytes|TestDebeziumSlotTakeover)$$' ./e2e/

## test-pg: with PG=<major> (13 to 18): unit-pg, then e2e-pg
test-pg: unit-pg e2e-pg

## unit-pg: with PG=<major>: the unit tests of the packages that use PostgreSQL (PG_PKGS), with PG_UNIT_FLAGS (-race)
unit-pg: deps
	@if [ -z "$(PG)" ]; then echo "make $@: name the version, e.g. make $@ PG=17" >&2; exit 2; fi
	@echo "$@: $$($$(./scripts/pgversion.sh $(PG))/postgres --version)"
	CGO_ENABLED=1 $(GOTEST) $(PG_UNIT_FLAGS) -count=1 -timeout 25m $(PG_PKGS)

## e2e-pg: with PG=<major>: the e2e tests of the core, faults and failover (PG_CORE_TESTS), on kfake
e2e-pg: deps
	@if [ -z "$(PG)" ]; then echo "make $@: name the version, e.g. make $@ PG=17" >&2; exit 2; fi
	@echo "$@: $$($$(./scripts/pgversion.sh $(PG))/postgres --version)"
	CGO_ENABLED=1 $(GOTEST) -count=1 -parallel $(E2E_PARALLEL) -timeout 20m -run '$(PG_CORE_TESTS)' ./e2e/

## e2e-kfake: the e2e tests that need kfake's fault hooks (KFAKE_TESTS), on kfake
e2e-kfake: deps-pg
	@./scripts/deps.sh postgres kcat gcc promtool kafka chromium
	CDC_RELAY_TEST_DEBEZIUM=1 CGO_ENABLED=1 $(GOTEST) -count=1 -parallel $(E2E_PARALLEL) -timeout 20m -run '$(KFAKE_TESTS)' ./e2e/

## axes: with CDC_RELAY_TEST_JSON_DIR=DIR, after the tests ran with it: fails naming each test that passed in no run
axes:
	@if [ -z "$(CDC_RELAY_TEST_JSON_DIR)" ]; then echo "make $@: set CDC_RELAY_TEST_JSON_DIR to the directory the tests wrote their JSON into" >&2; exit 2; fi
	$(GOTEST) -axes '$(CDC_RELAY_TEST_JSON_DIR)' ./...

## bench: drain, latency, memory and polling-baseline benchmarks (about 20 minutes)
bench: deps deps-kafka
	cd e2e/bench && $(GO) run . -apache -plot ../../docs/latency.png

## lint: gofmt, go vet, and the layering rule (scripts/layers/rule.txt: every import points down); k8s vets deploy/kubernetes/validate
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./scripts/layers # every import points down the layers of scripts/layers/rule.txt
	cd e2e/bench && $(GO) vet ./...
	cd scripts/image && $(GO) vet ./...

## licenses: regenerate docs/DEPENDENCIES.md, the modules the binary links and their licenses; fails on a license not allowed
licenses:
	$(GO) run ./scripts/licenses

## docs: regenerate docs/reference/ from the code: the command-line reference (the flag sets), the config file's (the key tables), the metrics' (the registry) and the errors' (the messages in the source, internal/errorsdoc); each page's test fails when it is stale
docs:
	$(GO) test ./cmd/cdc-relay/ -run '^TestCLIReference$$' -count=1 -update
	$(GO) test ./config/ -run '^TestConfigReference$$' -count=1 -update
	$(GO) test ./metrics/ -run '^TestMetricsReference$$' -count=1 -update
	$(GO) test ./internal/errorsdoc/ -run '^TestErrorsReference$$' -count=1 -update

## k8s: render deploy/kubernetes (kustomize) and the Helm chart, and check every object against the Kubernetes API's types, no cluster needed (and go vet of that module)
k8s:
	cd deploy/kubernetes/validate && $(GO) vet ./... && $(GO) test -count=1 ./...

## unit: unit tests with -race (some start a throwaway PostgreSQL)
unit: deps-pg
	@./scripts/deps.sh postgres gcc promtool
	CGO_ENABLED=1 $(GOTEST) -race -count=1 $(UNIT_PKGS)
	$(GO) test -count=1 -run '^TestExpandJSONPayloadAsTheRouter$$' ./decoder/ # its payloads of millions of characters, skipped under -race
	cd e2e/bench && $(GO) test -count=1 ./...

## fuzz: the decoder's fuzz target for FUZZTIME (30s); a failing input is written to decoder/testdata/fuzz/FuzzDecode/, to be kept there as a seed
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=$(FUZZTIME) ./decoder/

## e2e: the end-to-end suite on kfake (it builds the relay with -race)
e2e: deps-pg deps-chromium
	@./scripts/deps.sh postgres kcat gcc promtool
	CGO_ENABLED=1 $(GOTEST) -count=1 -parallel $(E2E_PARALLEL) -timeout 20m ./e2e/

clean:
	rm -rf bin dist
