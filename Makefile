# Loom's build, test and run entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT        := $(abspath .)
BIN         := $(ROOT)/bin
CLUSTER     := $(ROOT)/hack/cluster/cluster.sh
KUBECONFIG_LOCAL := $(ROOT)/.cluster/kubeconfig
GO_TEST_FLAGS ?= -count=1
# Packages whose tests run again under the race detector: the controller
# runs informers, workers, reloads and CRD watches on goroutines of their own.
RACE_PKGS ?= ./engine/controller/... ./engine/chart/...
# Flags of the e2e run: its controllers run in process, so -race covers the
# Manager, its reloads and informers against the real API server.
E2E_FLAGS ?= -race
# Flags of the converge benchmark (go run ./test/converge -help). Loom runs
# as bin/loom in a process of its own (-loom-mode process, the default).
CONVERGE_FLAGS ?= -parents 1000 -workers 8
# More converge flags for the bench targets, e.g. -port-wait 10m on a
# machine where something else may hold Loom's metrics port for a while.
CONVERGE_EXTRA ?=
# Flags of the conversion benchmark (go run ./test/convbench -help).
CONVBENCH_FLAGS ?=
# bench-scale: a bare cluster (etcd + kube-apiserver) beside the normal one,
# with a state folder and ports of its own, and the converge flags for it.
SCALE_PARENTS ?= 10000
SCALE_STATE := $(ROOT)/.cluster-scale
SCALE_CLUSTER := CLUSTER_STATE=$(SCALE_STATE) CLUSTER_COMPONENTS="etcd kube-apiserver" \
	CLUSTER_ETCD_PORT=25790 CLUSTER_ETCD_PEER_PORT=25800 CLUSTER_APISERVER_PORT=27443 $(CLUSTER)
# cluster-workload: a second bare cluster (etcd + kube-apiserver) beside the
# local one, as a workload cluster for children in other clusters (issue 34),
# with a state folder and ports that clash with neither .cluster nor
# .cluster-scale, said once in hack/cluster/workload.sh (which hack/e2e.sh
# uses too). Its kubeconfig is $(WORKLOAD_STATE)/kubeconfig. make cluster
# starts it too (about 5 s more); hack/cluster/workload.sh status says
# whether it is up.
WORKLOAD_STATE := $(ROOT)/.cluster-workload
WORKLOAD_CLUSTER := $(ROOT)/hack/cluster/workload.sh
SCALE_FLAGS ?= -bare -parents $(SCALE_PARENTS) -phases base,loom -target-rss 120 \
	-timeout 60m -delete-timeout 30m -touch-timeout 15m -restart-timeout 15m -cluster-dir $(SCALE_STATE)
# bench-shard: on the same bare cluster, in one converge run, one bin/loom
# run (default flags, as in bench-scale) on SHARD_BASE_PARENTS parents, then
# SHARD_REPLICAS replicas with --sharded on SHARD_PARENTS; the report (and
# the progress log beside it, .log) is kept in SHARD_REPORT, by default
# bench/results/shard-DATE.txt.
SHARD_BASE_PARENTS ?= 5000
SHARD_PARENTS ?= 15000
SHARD_REPLICAS ?= 3
SHARD_REPORT ?=
SHARD_FLAGS ?= -bare -phases loom@$(SHARD_BASE_PARENTS),loom/$(SHARD_REPLICAS)@$(SHARD_PARENTS) \
	-target-rss 120 -target-shard-rss 1.15 -timeout 90m -delete-timeout 60m -touch-timeout 15m -cluster-dir $(SCALE_STATE)
# bench-clusters: on the full local cluster and the workload cluster beside
# it (each started and stopped by the target unless it is up), in one
# converge run, one bin/loom run on CLUSTERS_PARENTS parents with every
# child local, then one on as many whose ConfigMaps are in the workload
# cluster (issue 34); the report (and its progress log, .log) is kept in
# CLUSTERS_REPORT, by default bench/results/clusters-DATE.txt.
CLUSTERS_PARENTS ?= 1000
CLUSTERS_REPORT ?=
CLUSTERS_FLAGS ?= -phases loom@$(CLUSTERS_PARENTS),remote@$(CLUSTERS_PARENTS) \
	-workload-kubeconfig $(WORKLOAD_STATE)/kubeconfig -target-remote-time 1.3 -target-remote-rss 1.3

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build bin/loom (VERSION=v1.2.3 sets what loom version says).
	go build $(if $(VERSION),-ldflags "-X github.com/loom-operator/loom/internal/version.Version=$(VERSION)") -o $(BIN)/loom ./cmd/loom

.PHONY: test
test: build ## Run every test: unit, fuzz seeds, golden files, each render benchmark once, and e2e against the local cluster (controller, chart and e2e with -race).
	go vet ./...
	go vet -tags e2e ./test/e2e/... ./test/faults/...
	go test $(GO_TEST_FLAGS) ./...
	go test -race $(GO_TEST_FLAGS) $(RACE_PKGS)
	$(BIN)/loom test templates/
	cd bench && go test $(GO_TEST_FLAGS) -bench . -benchtime 1x ./...
	$(MAKE) --no-print-directory test-monitoring
	hack/e2e.sh $(E2E_FLAGS)

.PHONY: test-unit
test-unit: build ## Run the tests that need no cluster.
	go test $(GO_TEST_FLAGS) ./...
	go test -race $(GO_TEST_FLAGS) $(RACE_PKGS)
	$(BIN)/loom test templates/
	cd bench && go test $(GO_TEST_FLAGS) -bench . -benchtime 1x ./...
	$(MAKE) --no-print-directory test-monitoring

.PHONY: test-monitoring
test-monitoring: ## Parse the dashboard's and the alerts' PromQL with Prometheus's parser, check the alerts' runbooks, and that test/monitoring/metrics.txt is current (its own module; no cluster).
	cd test/monitoring && go vet ./... && go test $(GO_TEST_FLAGS) ./...

.PHONY: test-e2e
test-e2e: build ## Run the e2e tests, then the fault tests (starts the local cluster if it is not up).
	hack/e2e.sh -v $(E2E_FLAGS)

.PHONY: test-faults
test-faults: build ## Run only the fault tests: API server restart, etcd compaction, SIGKILL, 409 storm, ... (starts the local cluster if it is not up).
	E2E_SUITES=faults hack/e2e.sh -v

.PHONY: golden
golden: build ## Rewrite every golden file: the template sets' and the Go tests' testdata (review the diff!).
	$(BIN)/loom test --update templates/
	go test ./... -update

.PHONY: docs
docs: ## Regenerate docs/reference/cli from the commands (cobra's doc generator); go test ./docs checks every docs link.
	go test $(GO_TEST_FLAGS) ./cmd/loom -run '^TestCLIReferenceIsCurrent$$' -update
	go test $(GO_TEST_FLAGS) ./docs

.PHONY: crds
crds: build ## Regenerate crds/myresources.example.loom.dev.yaml from templates/myresource/loom.yaml (loom crd).
	$(BIN)/loom crd -t templates/myresource > crds/myresources.example.loom.dev.yaml

.PHONY: manifests
manifests: ## Regenerate the chart's RBAC rules (loom rbac -t templates/ --rules), then deploy/loom.yaml from deploy/chart (default values, release loom in loom-system).
	go test $(GO_TEST_FLAGS) ./cmd/loom -run '^TestChartRBACRulesAreGenerated$$' -update
	go test $(GO_TEST_FLAGS) ./deploy -run '^TestManifestIsTheChartsOutput$$' -update

.PHONY: bench
bench: build ## Run the render benchmarks (Loom vs Helm's engine), then the converge benchmark (bin/loom in its own process) on the local cluster.
	hack/bench-render.sh
	started=0; \
	if ! $(CLUSTER) status >/dev/null 2>&1; then $(CLUSTER) up; started=1; fi; \
	trap 'if [[ $$started == 1 ]]; then $(CLUSTER) down; fi' EXIT; \
	KUBECONFIG=$(KUBECONFIG_LOCAL) go run ./test/converge $(CONVERGE_FLAGS) $(CONVERGE_EXTRA)

.PHONY: bench-scale
bench-scale: build ## Converge 10 000 parents (SCALE_PARENTS), baseline then bin/loom, on a bare cluster (etcd + kube-apiserver) of its own; prints one table.
	trap '$(SCALE_CLUSTER) down' EXIT; \
	$(SCALE_CLUSTER) up; \
	KUBECONFIG=$(SCALE_STATE)/kubeconfig go run ./test/converge $(SCALE_FLAGS) $(CONVERGE_EXTRA)

.PHONY: bench-shard
bench-shard: build ## On one bare cluster: bin/loom on 5 000 parents (SHARD_BASE_PARENTS), then 3 replicas with --sharded (SHARD_REPLICAS) on 15 000 (SHARD_PARENTS); each replica's peak RSS ÷ the one's. Report in bench/results/.
	report=$(or $(SHARD_REPORT),$(ROOT)/bench/results/shard-$$(date +%Y%m%d-%H%M%S).txt); \
	mkdir -p "$$(dirname "$$report")"; \
	echo "bench-shard: report to $$report, progress log to $$report.log"; \
	trap '$(SCALE_CLUSTER) down' EXIT; \
	$(SCALE_CLUSTER) up; \
	KUBECONFIG=$(SCALE_STATE)/kubeconfig go run ./test/converge $(SHARD_FLAGS) $(CONVERGE_EXTRA) \
		2> >(tee "$$report.log" >&2) | tee "$$report"

.PHONY: bench-clusters
bench-clusters: build ## 1 000 parents (CLUSTERS_PARENTS) with every child local, then as many with children in the local and the workload cluster; time to Ready and peak RSS, two clusters ÷ one. Report in bench/results/.
	report=$(or $(CLUSTERS_REPORT),$(ROOT)/bench/results/clusters-$$(date +%Y%m%d-%H%M%S).txt); \
	mkdir -p "$$(dirname "$$report")"; \
	echo "bench-clusters: report to $$report, progress log to $$report.log"; \
	started=(); \
	trap 'for c in "$${started[@]}"; do "$$c" down || true; done' EXIT; \
	for c in $(CLUSTER) $(WORKLOAD_CLUSTER); do \
		if ! "$$c" status >/dev/null 2>&1; then started=("$$c" "$${started[@]}"); "$$c" up; fi; \
	done; \
	KUBECONFIG=$(KUBECONFIG_LOCAL) go run ./test/converge $(CLUSTERS_FLAGS) $(CONVERGE_EXTRA) \
		2> >(tee "$$report.log" >&2) | tee "$$report"

.PHONY: bench-conversion
bench-conversion: build ## On the local cluster: 1 000 parents of a copy of the shipped set listed in its storage version and through Loom's conversion webhook (ratio, goal ≤ 2), and one ConversionReview of 100 parents (p50, p99).
	KUBECONFIG=$(KUBECONFIG_LOCAL) go run ./test/convbench $(CONVBENCH_FLAGS)

.PHONY: cluster
cluster: ## Start the local cluster (builds it from source the first time) and the workload cluster beside it.
	$(CLUSTER) up
	$(WORKLOAD_CLUSTER) up

.PHONY: cluster-down
cluster-down: stop ## Stop the local cluster (and Loom) and the workload cluster, and delete their state.
	$(WORKLOAD_CLUSTER) down
	$(CLUSTER) down

.PHONY: cluster-workload
cluster-workload: ## Start a second, bare cluster (etcd + kube-apiserver) as a workload cluster; kubeconfig in .cluster-workload/.
	$(WORKLOAD_CLUSTER) up

.PHONY: cluster-workload-down
cluster-workload-down: ## Stop the workload cluster and delete its state.
	$(WORKLOAD_CLUSTER) down

.PHONY: run
run: build ## Bring up the local and workload clusters and run the operator on the shipped example (and a Greeting with a child in each cluster).
	hack/run.sh

.PHONY: stop
stop: ## Stop the Looms started by make run.
	@if [[ -f .cluster/loom.pid ]]; then kill $$(cat .cluster/loom.pid) 2>/dev/null || true; rm -f .cluster/loom.pid; echo "Loom stopped"; fi

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')
