# Flotilla — Cluster API add-on provider for multi-cluster scheduling.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

ROOT        := $(abspath .)
BIN         := $(ROOT)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
export KUBEBUILDER_ASSETS := $(BIN)
# Tests print a summary; go test -json would hide it, so plain -v is parsed.
GO_TEST_FLAGS ?= -count=1
# Unit tests: every package but the real-apiserver tiers (test/integration, the
# e2e suite and its benchmarks); the test helpers' own tests run here.
PKGS_UNIT        = $(shell go list ./... | grep -v -e /test/integration/ -e '/e2e$$' -e /e2e/bench)
PKGS_INTEGRATION := ./test/integration/...
E2E_TIMEOUT      ?= 25m
E2E_KIND_TIMEOUT ?= 60m

# Release: images and clusterctl artifacts go to out/.
REGISTRY ?= ghcr.io/flotilla-io
TAG      ?= dev
OUT      := $(ROOT)/out
# Binaries that run in a cluster get an image; kubectl-flotilla does not.
IMAGE_BINARIES = $(notdir $(wildcard cmd/flotilla-*))

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build
.PHONY: test-bins
test-bins: ## Build kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok and controller-gen into bin/ (idempotent).
	@bash hack/build-test-bins.sh

$(CONTROLLER_GEN):
	@bash hack/build-test-bins.sh

.PHONY: kind-node-image
kind-node-image: ## Build the offline kind node image flotilla-kind/node:v1.36.3 from Debian's packages and the Go module proxy (hack/kindimage; cached by content, a run with nothing changed takes seconds).
	go run ./hack/kindimage

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRDs from api/.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook
	@if [ -d controllers ]; then $(CONTROLLER_GEN) rbac:roleName=flotilla-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac; fi
	@bash hack/label-crds.sh config/crd/bases
	@bash hack/embed-map-values.sh config/crd/bases/policy.flotilla.io_clusterresourceenvelopes.yaml data

.PHONY: verify-generate
verify-generate: generate ## Fail when generated files differ from what is committed.
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
	  echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- api config; git --no-pager diff --stat -- api config; exit 1; fi
	@echo "generated files are up to date"

# kubectl-flotilla's `version` prints it (cli.Version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build
build: ## Build Flotilla's binaries into bin/.
	go build -ldflags "-X github.com/flotilla-io/flotilla/cli.Version=$(VERSION)" -o $(BIN)/ ./cmd/...

##@ Release
.PHONY: images
images: ## Build each in-cluster binary static for linux/amd64 and write its image to out/images/<name>.tar (no Docker, no registry).
	@mkdir -p $(OUT)/bin/linux_amd64
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w" -o $(OUT)/bin/linux_amd64/ $(addprefix ./cmd/,$(IMAGE_BINARIES))
	go run ./hack/imagebuild --registry $(REGISTRY) --tag $(TAG) --revision "$$(git rev-parse HEAD 2>/dev/null)" \
	  --bin-dir $(OUT)/bin/linux_amd64 --out $(OUT)/images $(IMAGE_BINARIES)

.PHONY: docker-build
docker-build: ## Build the images with Docker, one `docker build` of the Dockerfile per binary.
	@for b in $(IMAGE_BINARIES); do \
	  echo "docker build $(REGISTRY)/$$b:$(TAG)"; \
	  docker build --target $$b --build-arg BINARY=$$b -t $(REGISTRY)/$$b:$(TAG) . || exit 1; \
	done

.PHONY: docker-push
docker-push: ## Push the images docker-build tagged.
	@for b in $(IMAGE_BINARIES); do docker push $(REGISTRY)/$$b:$(TAG) || exit 1; done

.PHONY: release-manifests
release-manifests: ## Write out/addon-components.yaml, out/metadata.yaml, the cluster templates and a clusterctl local repository (out/repository).
	go run ./hack/releasemanifests --out $(OUT) --registry $(REGISTRY) --tag $(TAG)

##@ Run
.PHONY: dev
dev: test-bins build ## Run the local fleet: a hub and 3 members as local processes, until Ctrl-C.
	go run ./hack/localfleet --repo . --manager bin/flotilla-manager

##@ Test
.PHONY: vet
vet: ## go vet every package.
	go vet ./...

.PHONY: test-unit
test-unit: ## Unit tests of the pure libraries and API types.
	go test $(GO_TEST_FLAGS) $(PKGS_UNIT)

.PHONY: test-integration
test-integration: test-bins ## Integration tests against a real kube-apiserver and etcd.
	go test $(GO_TEST_FLAGS) -v $(PKGS_INTEGRATION) 2>&1 | bash hack/summarize-tests.sh

.PHONY: test-e2e
test-e2e: test-bins build ## Ginkgo e2e specs on the local fleet (E2E_BACKEND=local).
	go test $(GO_TEST_FLAGS) -timeout $(E2E_TIMEOUT) -v ./e2e/ -ginkgo.v -ginkgo.no-color 2>&1 | bash hack/summarize-tests.sh

.PHONY: test-e2e-kind
test-e2e-kind: ## Ginkgo e2e specs on a kind management cluster with CAPD members (E2E_BACKEND=kind); needs Docker. KIND_OFFLINE=1 builds every image kind and CAPD run here (make kind-images) instead of pulling them; without Docker or those images it skips with the reason.
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory images release-manifests; fi
	KIND_OFFLINE=$(KIND_OFFLINE) OUT=$(OUT) E2E_KIND_TIMEOUT=$(E2E_KIND_TIMEOUT) bash hack/kindimage/e2e-kind.sh 2>&1 | bash hack/summarize-tests.sh

.PHONY: kind-images
kind-images: ## The offline node image plus what a registry-less kind management cluster runs: Cluster API's core, kubeadm and CAPD managers, CAPD's haproxy, a cert-manager stand-in, and their clusterctl repository in out/kind (hack/kindimage -providers; cached by content).
	go run ./hack/kindimage -providers $(OUT)/kind

.PHONY: test
test: test-bins build vet verify-generate ## Everything CI runs: vet, generated-files check, unit, integration and e2e tests on the local fleet (all but the specs labelled slow; make test-e2e runs those too; make test-e2e-kind runs the kind suite).
	@{ go test $(GO_TEST_FLAGS) -v $(PKGS_UNIT) $(PKGS_INTEGRATION); unit=$$?; \
	   go test $(GO_TEST_FLAGS) -timeout $(E2E_TIMEOUT) -v ./e2e/ -ginkgo.v -ginkgo.no-color -ginkgo.label-filter='!slow'; e2e=$$?; \
	   echo "e2e on kind: not part of make test: it builds or pulls every image kind and CAPD run and starts kind and CAPD clusters, which takes tens of minutes; run it with: make test-e2e-kind"; \
	   exit $$((unit | e2e)); } 2>&1 | bash hack/summarize-tests.sh

.PHONY: bench
bench: ## Go benchmarks of the scheduler and other hot paths (no apiserver).
	go test -run='^$$' -bench=. -benchmem ./internal/... ./controllers/binding/ ./controllers/applier/

.PHONY: bench-e2e
bench-e2e: test-bins build ## End-to-end benchmarks: propagation latency and status lag on the local fleet, hub apply cost, manager memory at 10,000 bindings (up to ~2 h on 2 cores).
	go test -run='^$$' -bench=. -benchtime=1x -timeout=180m ./e2e/bench/
