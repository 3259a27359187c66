package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

const referencesPipeline = `pipeline:
  name: refs
  identifier: refs
  variables:
    - name: version
      type: String
      value: "1"
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        variables:
          - name: tier
            type: String
            value: gold
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: build
                  identifier: build
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: echo hi}}
                    outputVariables:
                      - {name: version, type: String, value: v}
              - stepGroup:
                  name: checks
                  identifier: checks
                  variables:
                    - {name: weight, type: String, value: "5"}
                  steps:
                    - step:
                        type: ShellScript
                        name: probe
                        identifier: probe
                        strategy:
                          matrix: {region: [eu, us]}
                        spec:
                          shell: Bash
                          source:
                            type: Inline
                            spec:
                              script: |
                                echo <+matrix.region> <+matrix.regoin> <+stepGroup.variables.weight> <+stepGroup.variables.wieght>
                                echo <+steps.probe.status> <+steps.build.status>
              - step:
                  type: ShellScript
                  name: use
                  identifier: use
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          echo built <+execution.steps.bulid.output.outputVariables.version>
                          echo <+pipeline.variables.nothere> <+stage.spec.foo>
                          echo <+execution.steps.build.output.outputVariables.versoin> <+matrix.region>
                          echo <+stage.variables.tier> <+stage.variables.teir> <+pipeline.stages.biuld.status>
                          echo <+execution.steps.build.output.outputVariables.version> <+pipeline.variables.version>
                          echo <+execution.steps.probe.status> <+execution.steps.checks.steps.probe_0.status>
                          echo <+pipeline.stages.build.spec.execution.steps.checks.variables.weight>
                          echo <+pipeline.stages.fan_1.status> <+stage.name> <+env.name> <+secrets.getValue("x")>
    - stage:
        name: fan
        identifier: fan
        type: Custom
        strategy:
          parallelism: 2
        when:
          pipelineStatus: Success
          condition: <+pipeline.stages.build.variables.tier> == "gold" && <+pipeline.stages.build.variables.tire> == "x"
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: echo <+steps.b.status>}}}}
`

// Every reference that can never resolve is a warning at the path's line and column, with the
// nearest name defined there; every reference that may resolve (loop nodes by postfix, nested
// steps named relatively, matrix axes in scope, runtime roots such as env and secrets) is not.
// --strict makes each an error.
func TestReferencesThatCanNeverResolve(t *testing.T) {
	r := loadIn(t, map[string]string{"p.yaml": referencesPipeline}, "p.yaml", load.Options{})
	want := []string{
		"/p.yaml:47:57: warning: <+matrix.regoin> can never resolve: the enclosing matrix has no axis `regoin`",
		"/p.yaml:47:104: warning: <+stepGroup.variables.wieght> can never resolve: step group checks has no variable `wieght`",
		"/p.yaml:48:62: warning: <+steps.build.status> can never resolve: step group checks has no step `build` (it has probe)",
		"/p.yaml:59:40: warning: <+execution.steps.bulid.output.outputVariables.version> can never resolve: stage build has no step `bulid`",
		"/p.yaml:60:34: warning: <+pipeline.variables.nothere> can never resolve: the pipeline has no variable `nothere` (it has version)",
		"/p.yaml:60:64: warning: <+stage.spec.foo> can never resolve: stage build's spec has no field `foo` (it has execution)",
		"/p.yaml:61:34: warning: <+execution.steps.build.output.outputVariables.versoin> can never resolve: step build has no output variable `versoin`",
		"/p.yaml:61:90: warning: <+matrix.region> can never resolve: no matrix strategy encloses this expression",
		"/p.yaml:62:58: warning: <+stage.variables.teir> can never resolve: stage build has no variable `teir`",
		"/p.yaml:62:82: warning: <+pipeline.stages.biuld.status> can never resolve: the pipeline has no stage `biuld`",
		"/p.yaml:75:77: warning: <+pipeline.stages.build.variables.tire> can never resolve: stage build has no variable `tire`",
		"/p.yaml:79:132: warning: <+steps.b.status> can never resolve: stage fan has no step `b`",
	}
	var got []string
	for _, d := range r.Diags {
		if d.Code == diag.UnknownReference {
			got = append(got, d.String())
		}
	}
	if len(got) != len(want) {
		t.Errorf("want %d unknown references, got %d:\n%s", len(want), len(got), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("reference %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
	if !r.OK() {
		t.Errorf("unknown references are warnings, yet the load failed:\n%s", r.Diags.Render(r.Sources))
	}
	rendered := r.Diags.Render(r.Sources)
	for _, hint := range []string{"did you mean `build`?", "did you mean `version`?", "did you mean `tier`?", "did you mean `region`?", "did you mean `weight`?"} {
		if !strings.Contains(rendered, hint) {
			t.Errorf("no hint %q:\n%s", hint, rendered)
		}
	}

	r = loadIn(t, map[string]string{"p.yaml": referencesPipeline}, "p.yaml", load.Options{Strict: true})
	if r.OK() || len(r.Diags.Invalid()) != len(want) || !strings.Contains(r.Diags.Render(r.Sources), "no stage `biuld` (--strict)") {
		t.Errorf("--strict: want %d errors:\n%s", len(want), r.Diags.Render(r.Sources))
	}
}

// What the pipeline leaves open is not judged: a chained pipeline's inputs and outputs (its own
// context), variables given as a runtime input, a matrix whose axes are an expression.
func TestReferencesIntoOpenPartsAreNotJudged(t *testing.T) {
	src := `pipeline:
  name: open
  identifier: open
  stages:
    - stage:
        name: child
        identifier: child
        type: Pipeline
        spec:
          org: default
          project: p
          pipeline: other
          inputs:
            identifier: other
            variables:
              - {name: tag, type: String, value: <+pipeline.variables.childOnly>}
          outputs:
            - name: image
              value: <+pipeline.variables.childOnly>
    - stage:
        name: loop
        identifier: loop
        type: Custom
        strategy:
          matrix: <+pipeline.variables.axes>
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: echo <+matrix.anything> <+pipeline.stages.child.output.image>}}}}
`
	r := loadIn(t, map[string]string{"p.yaml": src}, "p.yaml", load.Options{})
	for _, d := range r.Diags {
		if d.Code == diag.UnknownReference && !strings.Contains(d.Message, "pipeline.variables.axes") {
			t.Errorf("judged an open reference: %s", d)
		}
	}
}

// A step that would run nothing is an error: a ShellScript whose script sits one level too
// shallow (the hint says where it is), a blank script, a Run step with neither command nor
// image. A Run step with an image and no command runs the image's entrypoint and stays valid.
func TestStepsThatWouldRunNothing(t *testing.T) {
	src := `pipeline:
  name: nothing
  identifier: nothing
  stages:
    - stage:
        name: a
        identifier: a
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: x
                  identifier: x
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                      script: echo hi
              - step:
                  type: ShellScript
                  name: y
                  identifier: y
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: "  "
`
	r := loadIn(t, map[string]string{"p.yaml": src}, "p.yaml", load.Options{})
	got := r.Diags.Render(r.Sources)
	for _, want := range []string{
		`/p.yaml:20:28: inline script source is missing required field "script": the step would run nothing`,
		"hint: `script` at line 21 sits beside `type`; indent it under `spec:` (source.spec.script)",
		"/p.yaml:31:33: the inline script is empty: the step would run nothing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q:\n%s", want, got)
		}
	}
	if r.OK() {
		t.Error("a step that runs nothing loaded")
	}
}

// A Deployment stage's paths into its service's, environment's and infrastructure's variables
// are checked against the entities it resolves to: the service's variables with the
// environment's overrides for it, the environment's own, a deployment template
// infrastructure's; enclosing step groups' variables count for serviceVariableOverrides. A
// stage whose service is a runtime input is not judged.
func TestEntityVariableReferences(t *testing.T) {
	files := map[string]string{
		"svc.yaml": `service:
  name: web
  identifier: web
  serviceDefinition:
    type: Kubernetes
    spec:
      variables:
        - {name: port, type: String, value: "8080"}
`,
		"env.yaml": `environment:
  name: dev
  identifier: dev
  type: PreProduction
  variables:
    - {name: region, type: String, value: eu}
  serviceOverrides:
    - serviceRef: web
      variables:
        - {name: replicas, type: String, value: "2"}
`,
		"infra.yaml": `infrastructureDefinition:
  name: k
  identifier: k
  environmentRef: dev
  deploymentType: Kubernetes
  type: KubernetesDirect
  spec:
    connectorRef: cluster
    namespace: web
`,
		"connector.yaml": `connector:
  name: cluster
  identifier: cluster
  type: K8sCluster
  spec:
    credential:
      type: InheritFromDelegate
`,
		"p.yaml": `pipeline:
  name: entity refs
  identifier: entity_refs
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: k}]
          execution:
            steps:
              - stepGroup:
                  name: g
                  identifier: g
                  variables:
                    - {name: canary, type: String, value: "1"}
                  steps:
                    - step:
                        type: ShellScript
                        name: s
                        identifier: s
                        spec:
                          shell: Bash
                          source:
                            type: Inline
                            spec:
                              script: |
                                echo <+serviceVariables.port> <+serviceVariables.replicas> <+serviceVariables.prot>
                                echo <+env.variables.region> <+env.variables.regoin> <+serviceVariableOverrides.canary>
                                echo <+serviceVariableOverrides.cnary> <+infra.variables.anything> <+env.name>
    - stage:
        name: open
        identifier: open
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: <+input>}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: k}]
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: echo <+serviceVariables.whatever>}}}}
`,
	}
	want := []string{
		"/p.yaml:34:94: <+serviceVariables.prot> can never resolve: service web has no variable `prot`",
		"/p.yaml:35:64: <+env.variables.regoin> can never resolve: environment dev has no variable `regoin`",
		"/p.yaml:36:40: <+serviceVariableOverrides.cnary> can never resolve: service web has no variable `cnary`",
	}
	for _, opts := range []load.Options{{}, {Strict: true}} {
		r := loadIn(t, files, "p.yaml", opts)
		var got []string
		for _, d := range r.Diags {
			if d.Code == diag.UnknownReference {
				got = append(got, d.String())
			}
		}
		if len(got) != len(want) {
			t.Fatalf("strict %v: want %d unknown references, got %d:\n%s", opts.Strict, len(want), len(got), r.Diags.Render(r.Sources))
		}
		for i := range want {
			if !strings.Contains(strings.Replace(got[i], "warning: ", "", 1), want[i]) {
				t.Errorf("reference %d:\n got %s\nwant %s...", i, got[i], want[i])
			}
		}
		rendered := r.Diags.Render(r.Sources)
		for _, hint := range []string{"did you mean `port`?", "did you mean `region`?", "did you mean `canary`?"} {
			if !strings.Contains(rendered, hint) {
				t.Errorf("no hint %q:\n%s", hint, rendered)
			}
		}
		if r.OK() == opts.Strict {
			t.Errorf("strict %v: loaded %v:\n%s", opts.Strict, r.OK(), rendered)
		}
	}
}
