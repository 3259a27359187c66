# Gantry: two commands on a fresh machine — `make run` and `make test`.
GO      ?= go
BIN     := bin/gantry
FUZZTIME ?= 50000x
LONGFUZZ ?= 5m

.PHONY: all build run test vet fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gantry

# Until the execution engine lands (issue 3), `make run` checks the example pipelines and
# renders an expression against an example context: everything gantry can do today.
run: build
	$(BIN) validate examples/*.yaml
	$(BIN) validate examples/11-runtime-inputs.yaml --input-set examples/inputsets/prod-hotfix.yaml \
		--set pipeline.variables.note=hello --for-run
	$(BIN) eval --context examples/context.json --at pipeline.stages.deploy.spec.execution.steps.probe \
		'<+<+pipeline.variables.csv>.split(",")[1]> from <+stage.identifier>, build <+json.select("build.id", <+execution.steps.probe.output.httpResponseBody>)>'
	$(BIN) eval --condition --context examples/context.json '<+pipeline.variables.list>.contains("eu") && <+pipeline.sequenceId> > 1'

vet:
	$(GO) vet ./...

# Unit, table, example and short fuzz tests. Long fuzzing is `make fuzz`.
test: vet
	$(GO) test -race -count=1 ./...
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME) ./expressions
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./pipeline/load

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(LONGFUZZ) ./expressions
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(LONGFUZZ) ./pipeline/load

# Prints ns/op for Gantry's expression rendering and for the same work in raw expr, and ratios.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./expressions | tee .bench.out
	@bash hack/bench-ratios.sh .bench.out

clean:
	rm -rf bin .bench.out
