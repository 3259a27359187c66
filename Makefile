# Gantry: two commands on a fresh machine — `make run` and `make test`.
GO      ?= go
BIN     := bin/gantry
FUZZTIME ?= 50000x
LONGFUZZ ?= 5m

.PHONY: all build run run-ci-local run-k8s run-topology k8s-tools terraform-tools ssh-tools browser-tools prometheus-tools vault-tools test vet fuzz bench stress clean docs-images perf-doc

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gantry
	CGO_ENABLED=0 $(GO) build -o bin/gantry-helper ./cmd/gantry-helper

# Runs an example pipeline end to end on the embedded Temporal server (state in .gantry/),
# streaming step output. Run it again: the sequence number goes up, the state survives.
run: build
	$(BIN) run examples/02-build-test-deploy.yaml --data-dir .gantry --logs

# Runs examples/ci-local (a `runtime: Docker` CI stage: clone, a store in a container, go test on
# the machine, a BuildKit image; then a Deployment stage running it) on this machine, no
# cluster: gantry run is the build machine, with a containerd of its own. Needs root.
run-ci-local: build
	hack/run-ci-local.sh

# Runs examples/k8s (dev rolling deploy, sign-off, prod canary + rolling with rollback) against
# a local Kubernetes control plane with simulated nodes. The first run builds it (minutes).
run-k8s: build
	hack/run-k8s.sh

# Runs the example on the production topology as processes: PostgreSQL (Debian's, installed if
# missing), `gantry temporal` on it, two workers and `gantry server` (hack/topology).
run-topology: build
	hack/run-topology.sh

# Builds (once, cached outside the repo by go.sum) the Kubernetes binaries the tests start,
# BuildKit and runc for the node's BuildAndPush image (hack/buildkit), and versitygw, the
# S3-compatible server the AWS tests use (hack/s3).
k8s-tools:
	@hack/tool.sh k8s >/dev/null
	@hack/tool.sh node >/dev/null
	@hack/tool.sh buildkit >/dev/null
	@hack/tool.sh s3 >/dev/null

# Builds OpenTofu and the test provider's filesystem mirror from the Go module proxy (cached)
# for the Terraform steps' tests.
terraform-tools:
	@hack/tool.sh tofu >/dev/null
	@hack/tool.sh tofu provider.sh >/dev/null

# Builds Prometheus from the Go module proxy (cached) for the Verify step's tests.
prometheus-tools:
	@hack/tool.sh prometheus >/dev/null

# Builds HashiCorp Vault (hack/vault: once, cached outside the repo) for the Vault connector's tests.
vault-tools:
	@hack/tool.sh vault >/dev/null

# Installs Debian's OpenSSH server (not started: the SSH tests run their own on loopback).
ssh-tools:
	@hack/ssh/install-sshd.sh

# Installs Debian's Chromium (apt-get) for the Web UI's browser tests when it is missing.
browser-tools:
	@hack/browser/install-chromium.sh

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# Unit, table, example and short fuzz tests. Long fuzzing is `make fuzz`. Test artifacts (the
# browser tests' screenshots) are kept in .test-output/_artifacts. The tools build in the
# background while go test compiles and runs the packages that do not need them; a test that
# asks for a tool still being built waits for that build (hack/tool.sh). The e2e package runs
# in a process of its own beside the other packages, as two shards at once with
# GANTRY_E2E_SHARDS=2 on a machine with cores to spare (hack/go-test.sh). Each phase prints
# its seconds; the tools' own output is in .test-output/tools.log.
test:
	@mkdir -p .test-output
	@hack/phase.sh vet $(MAKE) --no-print-directory vet
	@hack/phase.sh debian-packages hack/debian-packages.sh
	@# go test runs under gotestsum (go test -json: the usual output, and the run's timings kept
	@# to list the slowest tests), the e2e package beside the other packages.
	@hack/phase.sh tools $(MAKE) --no-print-directory k8s-tools terraform-tools vault-tools prometheus-tools >.test-output/tools.log 2>&1 & tools=$$!; \
	  GO=$(GO) hack/phase.sh go-test hack/go-test.sh .test-output; \
	  rc=$$?; wait $$tools || { cat .test-output/tools.log; rc=1; }; tail -1 .test-output/tools.log; \
	  echo "slowest tests (over 60 s):"; $(GO) tool gotestsum tool slowest --jsonfile .test-output/go-test.json --threshold 60s | head -20; exit $$rc
	@hack/phase.sh fuzz sh -c '$(GO) test -run "^$$" -fuzz "^FuzzRender$$" -fuzztime $(FUZZTIME) ./expressions && \
	  $(GO) test -run "^$$" -fuzz "^FuzzLoad$$" -fuzztime $(FUZZTIME) ./pipeline/load && \
	  $(GO) test -run "^$$" -fuzz "^FuzzExpand$$" -fuzztime $(FUZZTIME) ./pipeline/templates'

# Long load tests, outside `make test`: decisions sent to many executions while another process
# saturates the CPU (each applied exactly once), a 3,000-iteration stage matrix, a stage of the
# most steps a stage may hold with outputs of nearly the execution's limit, a pipeline of 20,000
# steps, 1,000 executions queued on one key (each holds it exactly once), and 10,000
# simultaneous starts of one pipeline limited to 10 running at once.
# GANTRY_STRESS_EXECUTIONS sets the number of executions (40).
stress: k8s-tools
	GANTRY_STRESS=1 GANTRY_STRESS_LOCKS=1000 GANTRY_STRESS_RUNNING=10000 GANTRY_STRESS_RUNNING_LIMIT=10 $(GO) test -count=1 -run 'TestStress|TestScaleStageMatrixOf3000|TestScaleStageOfMaxSteps|TestScalePipelineOf20000Steps|TestLockManyWaiters|TestConcurrencyLimitManyStarts' -timeout 150m -v ./e2e

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(LONGFUZZ) ./expressions
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(LONGFUZZ) ./pipeline/load
	$(GO) test -run '^$$' -fuzz '^FuzzExpand$$' -fuzztime $(LONGFUZZ) ./pipeline/templates

# Prints Gantry's figures next to a baseline measured in the same run, and their ratios:
# expression rendering vs raw expr, a 100-step pipeline vs a hand-written Temporal workflow, and a
# 10-Deployment rolling deploy vs kubectl apply + rollout status on the same cluster, a
# 10-Deployment HelmDeploy vs the helm CLI's upgrade --install --wait (built by hack/helm), 200
# concurrent 3-step pipelines on the PostgreSQL topology vs the embedded SQLite server, and the
# marginal cost per short step (fast path on and off), and per Run step without an image on a
# build machine, vs drone-runner-exec, and 100 printing steps
# with their logs shipped to S3 (versitygw) vs logs on disk, and a pipeline with notification
# rules vs the same without, webhook bursts vs raw workflow starts, and 2,000 executions
# waiting for approvals at once (embedded and topology; GANTRY_SCALE_RUNS sets the number), the
# list of waiting decisions with 100 and 10,000 waiting vs bare visibility pages
# (GANTRY_PENDING_RUNS), and
# Gantry's execution page in Chromium (time to draw a 210-node run) vs the Temporal UI's page
# of the same run, and its server CPU per viewer and minute while a run is live,
# a CI stage of 5 Run steps vs a hand-written pod of the same containers, BuildAndPush vs the
# same BuildKit build driven by hand, a CI stage with its S3 cache restored vs cold, and 100
# Verify steps against one Prometheus (range queries served vs asked, CPU per metric-minute
# beyond the same runs with a Wait step), and a pipeline of 5,000 plain stages (25 segments) vs
# one of 100 (time per stage), and the memory the API server takes to refuse the largest
# YAML alias bomb vs a small invalid pipeline.
bench: k8s-tools terraform-tools ssh-tools browser-tools prometheus-tools
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./expressions | tee .bench.out
	$(GO) test -run '^$$' -bench 'OnRun(Prepared|NewPipeline)' -benchtime 500x -count 3 ./policies | tee -a .bench.out
	$(GO) test -run '^$$' -bench OnRunUnprepared -benchtime 20x -count 3 ./policies | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Expand200|LoadTemplated200|LoadInline200' -benchtime 10x -count 3 ./pipeline/templates | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Gantry100Steps$$|Raw100Steps|GantryMatrix200|RawFanout200' -benchtime 5x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Gantry100StepsUIPolled|Gantry100StepsWithUI' -benchtime 5x -count 5 ./e2e | tee .bench-ui.out
	$(GO) test -run '^$$' -bench 'GantryMatrix5000' -benchtime 1x ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Stages5000$$' -benchtime 1x -timeout 60m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'RefuseAliasBomb' -benchtime 5x ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'WebhookDeliveries' -benchtime 10x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Scale(Embedded|Topology)' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'PendingList' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Approvals(Embedded|Topology)' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'APIRoles' -benchtime 300x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'APICallOIDC' -benchtime 300x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'RollingDeploy10|Kubectl10' -benchtime 3x -count 3 ./activities/k8s | tee -a .bench.out
	GANTRY_HELM_BIN=$$(hack/helm/build.sh) $(GO) test -run '^$$' -bench 'HelmDeploy10|HelmCLI10|HelmBlueGreen|HelmCLIBlueGreen' -benchtime 3x -count 3 ./activities/k8s | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'AsgRolling' -benchtime 5x -count 3 ./activities/asg | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'TerraformApply20|TofuByHand20' -benchtime 5x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'SshDeploy3Hosts|SshByHand3Hosts' -benchtime 5x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Fetch|RefAdvertisement' -benchtime 20x -count 3 ./activities/gitstore | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'RemoteStart' -benchtime 10x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'LedgerReads' -benchtime 5x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'InstanceSync' -benchtime 3x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'ContainerGroup|KubectlRunExec' -benchtime 5x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'CIStage5Runs|HandPod5|BuildAndPush|BuildDirect' -benchtime 3x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'CacheRestore' -benchtime 2x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'LogsToS3' -benchtime 10x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Notifications' -benchtime 10x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'Throughput' -benchtime 1x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'LockHandoff' -benchtime 3x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'DeploymentConstraint$$' -benchtime 20x -count 4 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'DeploymentConstraintRollout' -benchtime 20x -count 3 ./e2e | tee -a .bench.out
	GANTRY_DRONE_BIN=$$(hack/bench-drone.sh --bin) $(GO) test -run '^$$' -bench 'ShortSteps' -benchtime 15x -count 3 ./e2e | tee -a .bench.out
	GANTRY_DRONE_BIN=$$(hack/bench-drone.sh --bin) $(GO) test -run '^$$' -bench 'MachineSteps' -benchtime 10x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'MachineContainers5' -benchtime 8x -count 3 ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'ExecutionPage200' -benchtime 5x -count 3 ./e2e | tee -a .bench-ui.out
	$(GO) test -run '^$$' -bench 'ExecutionPageViewers' -benchtime 1x -count 3 ./e2e | tee -a .bench-ui.out
	$(GO) test -run '^$$' -bench 'Verify100' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	$(GO) test -run '^$$' -bench 'TicketWait1000' -benchtime 1x -count 1 -timeout 30m ./e2e | tee -a .bench.out
	hack/bench-drone.sh 15 3 | tee -a .bench.out
	@bash hack/bench-ratios.sh .bench.out
	@bash hack/bench-ratios.sh .bench-ui.out
	bash hack/perf-doc.sh .bench.out .bench-ui.out > docs/performance.md

# Redraws the pictures from their Graphviz sources (Debian's graphviz when missing).
docs-images:
	@command -v dot >/dev/null || (apt-get update && apt-get install -y graphviz)
	dot -Tsvg docs/images/architecture.dot -o docs/images/architecture.svg
	dot -Tsvg docs/images/instances.dot -o docs/images/instances.svg

# Regenerates docs/performance.md from the last `make bench` output.
perf-doc:
	bash hack/perf-doc.sh .bench.out .bench-ui.out > docs/performance.md

clean:
	rm -rf bin .bench.out .bench-ui.out .test-output
