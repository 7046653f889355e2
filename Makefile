# kafkalink: `make demo` runs the product on a local control plane; `make test` runs everything CI runs; `make help` lists every target.
SHELL := /bin/bash
GO ?= go
FUZZTIME ?= 10s
# Control-plane tests start real processes; run their packages one at a time on small machines.
INTEGRATION_FLAGS ?= -p 1 -timeout 40m
# The release version (VERSION file) and source revision, stamped into binaries, images, install.yaml
# and the chart. `make release VERSION=1.2.3` builds a release without editing the tree.
VERSION ?= $(shell cat VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
REGISTRY ?= ghcr.io/kafkalink
PLATFORMS ?= linux/amd64 linux/arm64
LDFLAGS := -s -w -X github.com/kafkalink/kafkalink/pkg/version.Version=$(VERSION) -X github.com/kafkalink/kafkalink/pkg/version.Revision=$(REVISION)
# The control plane's bin folder, expanded by the shell in recipes: KAFKALINK_CONTROLPLANE_BIN when
# already set (binaries built elsewhere, which the clean-clone test reuses), else built or reused
# by hack/build-controlplane.sh.
CONTROLPLANE_BIN = $${KAFKALINK_CONTROLPLANE_BIN:-$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1)}
# The packages whose tests run goroutines (work queues, informers, the proxy's connections) run
# under the race detector in test-unit; it needs cgo and a C compiler (hack/install-deps.sh).
MODULE := github.com/kafkalink/kafkalink
RACE_PACKAGES ?= pkg/controller pkg/member pkg/gatewaycontroller pkg/bindingcontroller pkg/operator proxy/server proxy/kafka

.PHONY: bundle vulncheck release all build test test-unit test-integration e2e fuzz generate verify bench demo demo-stretch lint lint-fix controlplane manifests image clean testdata help

all: build ## The default goal: build.

help: ## List the targets and what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build the operator, the proxy and the kubectl plugin (kubectl-kafkalink) into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

controlplane: ## Build (or reuse) kube-apiserver, etcd, kube-controller-manager and kubectl.
	@[ -n "$$KAFKALINK_CONTROLPLANE_BIN" ] || bash hack/build-controlplane.sh >/dev/null

test: verify lint test-unit test-integration fuzz ## Everything CI runs.

test-unit: ## Pure packages, the proxy with kfake, the image builder, the OLM bundle, and all that needs no control plane; RACE_PACKAGES under -race.
	$(GO) test -short -count=1 $$($(GO) list ./... | grep -v -x -F $(foreach p,$(RACE_PACKAGES),-e $(MODULE)/$(p)))
	CGO_ENABLED=1 $(GO) test -race -short -count=1 $(addprefix ./,$(RACE_PACKAGES))
	cd hack/image && $(GO) test -count=1 ./...
	cd hack/bundle && $(GO) test -count=1 ./...

test-integration: controlplane ## Control-plane tests: real kube-apiserver, etcd and kube-controller-manager.
	KAFKALINK_CONTROLPLANE_BIN=$(CONTROLPLANE_BIN) \
	  $(GO) test -count=1 $(INTEGRATION_FLAGS) ./test/...

e2e: test-integration ## End-to-end tests live with the control-plane tests.

fuzz: ## A short run of every fuzz target (FUZZTIME each).
	FUZZTIME=$(FUZZTIME) bash hack/fuzz.sh

generate: ## Regenerate deepcopy, register, clients, listers, informers, applyconfigurations, CRDs, install.yaml and the Argo CD health checks.
	bash hack/update-codegen.sh
	VERSION=$(VERSION) REGISTRY=$(REGISTRY) bash hack/update-manifests.sh
	$(GO) test -count=1 ./pkg/argocd -run TestGeneratedFiles -update

testdata: ## Rewrite every golden file (gateway, binding, proxy rewrite, Argo CD health of the gateway cases) from the current code; review the diff.
	$(GO) test -count=1 ./pkg/gateway ./pkg/binding ./proxy/kafka -run Golden -update
	$(GO) test -count=1 ./pkg/argocd -run Golden -update

manifests: ## Rebuild manifests/install.yaml and install-namespaced.yaml (images at VERSION) and the chart's CRDs, RBAC copies and Chart.yaml.
	VERSION=$(VERSION) REGISTRY=$(REGISTRY) bash hack/update-manifests.sh

image: ## Multi-arch (PLATFORMS) OCI image indexes of the operator and the proxy (static binaries, empty base, non-root) in _output/images.
	VERSION=$(VERSION) REVISION=$(REVISION) REGISTRY=$(REGISTRY) PLATFORMS="$(PLATFORMS)" OUT=_output/images bash hack/build-images.sh

bundle: ## The OLM bundle of VERSION (ClusterServiceVersion, CRDs, annotations, bundle.Dockerfile) in _output/bundle, from manifests/, and its image in _output/kafkalink-bundle.oci.tar.
	cd hack/bundle && $(GO) run . -root ../.. -out ../../_output/bundle -version $(VERSION) -registry $(REGISTRY) -image-archive ../../_output/kafkalink-bundle.oci.tar

release: ## Release assets for VERSION in _output/release: install and CRD YAML, image layouts and archives, the Helm chart.
	VERSION=$(VERSION) REVISION=$(REVISION) REGISTRY=$(REGISTRY) PLATFORMS="$(PLATFORMS)" bash hack/release.sh

verify: ## Fail when generated code is stale, go.mod untidy, Go files not gofmt'ed, or a known vulnerability is reachable.
	bash hack/verify-codegen.sh
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	bash hack/vulncheck.sh
	@bash hack/verify-manifests.sh
	bash hack/verify-monitoring.sh
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^generated/')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

vulncheck: ## govulncheck on every package (says so and passes when its database is unreachable).
	bash hack/vulncheck.sh

# golangci-lint is built from the Go module proxy in its own module (hack/tools/golangci-lint), so
# its dependencies never move ours; `go tool -n` builds it once and prints the cached binary.
GOLANGCI_LINT = $$(cd hack/tools/golangci-lint && $(GO) tool -n golangci-lint)

lint: ## go vet, then golangci-lint (.golangci.yml) on the module, on hack/image and on hack/bundle.
	$(GO) vet ./...
	bin=$(GOLANGCI_LINT) && $$bin run ./... && (cd hack/image && $(GO) vet ./... && $$bin run ./...) && cd hack/bundle && $(GO) vet ./... && $$bin run ./...

lint-fix: ## Let golangci-lint fix what it can (import groups and aliases, some errorlint findings).
	$(GOLANGCI_LINT) run --fix ./...

bench: controlplane ## Benchmarks: figures side by side from one run, not pass/fail.
	@echo "== proxy: direct vs through kafkalink-proxy (kfake, loopback); idle connections; 1,000 small producers; 1,000 virtual clusters (reload, SNI handshakes); SaslTermination SCRAM-SHA-512 handshakes"
	$(GO) run ./proxy/bench
	@echo "== SaslTermination: one SCRAM-SHA-512 authentication through the filter chain, on one core"
	$(GO) test -run '^$$' -bench BenchmarkScramSHA512Handshake -benchtime 3000x ./proxy/filter/sasltermination
	@echo "== RecordEncryption: the chain's CPU on about 900 KiB of 16 KiB and 1 KiB records (produce, fetch), and a Fetch response read whole vs streamed"
	$(GO) test -run '^$$' -bench 'BenchmarkChain' -benchtime 300x ./proxy/filter/encryption
	$(GO) test -run '^$$' -bench 'BenchmarkDecryptFetch' -benchtime 200x ./proxy/kafka
	@echo "== binding: secret assembly per connection"
	$(GO) test -run '^$$' -bench . -benchtime 200x ./pkg/binding
	@echo "== gateway: pure translation of 200 routes x 10 brokers, and of 1,000 routes x 3 brokers on one gateway (config-bytes: the proxy configuration)"
	$(GO) test -run '^$$' -bench 'BenchmarkTranslate(200|1000)Routes' ./pkg/gateway
	@echo "== gateway: 200 and 1,000 routes x 10 brokers applied against the local control plane (2,200 and 11,000 Services), control-plane CPU per Service, then idle writes"
	KAFKALINK_CONTROLPLANE_BIN=$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1) \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkGateway200Routes -benchtime=1x -timeout 30m ./test/gateway
	KAFKALINK_CONTROLPLANE_BIN=$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1) GATEWAY_BENCH_ROUTES=1000 \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkGateway200Routes -benchtime=1x -timeout 45m ./test/gateway
	@echo "== gateway: 1,000 routes x 10 brokers with headless in-cluster Services (services.inClusterType: Headless): no cluster IPs to allocate"
	KAFKALINK_CONTROLPLANE_BIN=$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1) GATEWAY_BENCH_ROUTES=1000 GATEWAY_BENCH_HEADLESS=1 \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkGateway200Routes -benchtime=1x -timeout 30m ./test/gateway
	@echo "== gateway: operator heap and RSS with 20,000 unrelated Secrets of 4 KiB in the cluster"
	KAFKALINK_CONTROLPLANE_BIN=$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1) \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkOperatorMemory20kSecrets -benchtime=1x -timeout 30m ./test/gateway
	@echo "== binding: 1,000, 2,000, 5,000 and 20,000 KafkaConnections to Ready, CA renewal, peak memory, live heap, writes, idle writes, side by side, then 20,000 with the binding controller alone (about 35 minutes)"
	KAFKALINK_CONTROLPLANE_BIN=$$(bash hack/build-controlplane.sh 2>/dev/null | tail -n1) BINDING_BENCH_CONNECTIONS=1000,2000,5000,20000 \
	  $(GO) test -count=1 -run '^$$' -bench FiveThousand -benchtime 1x -timeout 120m ./test/binding

demo: controlplane ## The whole product on a local control plane with a demo Kafka, until Ctrl-C (DEMO_ONCE=1: then exit).
	@echo "building the demo (the end-to-end test's environment, run interactively)"
	$(GO) test -c -o _output/demo.test ./test/e2e
	KAFKALINK_CONTROLPLANE_BIN=$(CONTROLPLANE_BIN) \
	  ./_output/demo.test -test.run '^TestDemo$$' -test.v -test.timeout 0 $(if $(DEMO_ONCE),-demo-once,-demo)

demo-stretch: controlplane ## Stretch clusters on three local control planes (central, member-a, member-b), until Ctrl-C (DEMO_ONCE=1: then exit).
	$(GO) test -c -o _output/demo-stretch.test ./test/stretch
	KAFKALINK_CONTROLPLANE_BIN=$(CONTROLPLANE_BIN) \
	  ./_output/demo-stretch.test -test.run '^TestDemoStretch$$' -test.v -test.timeout 0 $(if $(DEMO_ONCE),-demo-once,-demo)

clean: ## Remove bin/ and _output/.
	rm -rf bin _output
