package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// tfModule is a root module of terraform_data resources only (no provider to download): count
// copies named by a prefix, a sensitive token kept in one of them, and outputs.
const tfModule = `terraform {
  backend "local" {}
}
variable "replicas" { default = 1 }
variable "prefix" { default = "web" }
variable "token" {
  default   = ""
  sensitive = true
}
resource "terraform_data" "web" {
  count = var.replicas
  input = "${var.prefix}-${count.index}"
}
resource "terraform_data" "secret" {
  input = var.token
}
variable "fail" { default = false }
resource "terraform_data" "broken" {
  count      = var.fail ? 1 : 0
  depends_on = [terraform_data.web]
  provisioner "local-exec" { command = "exit 3" }
}
output "names" { value = join(",", terraform_data.web[*].output) }
output "token" {
  value     = var.token
  sensitive = true
}
`

// stateNames reads the names the state of a local backend holds ("" when it holds none).
func stateNames(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
		Resources []struct {
			Name      string `json:"name"`
			Instances []any  `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state %s: %v", path, err)
	}
	if len(st.Resources) == 0 {
		return ""
	}
	return fmt.Sprint(st.Outputs["names"].Value)
}

// A plan made from a Git repository (the root module and a var file at the branch's head, an
// inline var file with a secret, an inline backend configuration), an approval, then an apply
// that inherits the plan: it applies exactly what was planned and approved, although the
// repository changed while the approval waited. The plan's counts and the apply's outputs are
// expressions of later steps; the secret is in no log, plan output or history.
func TestTerraformPlanApprovalApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv := gittest.Start(t)
	srv.NewRepo("infra", map[string]string{"tf/main.tf": tfModule, "env/dev.tfvars": "replicas = 3\n"})
	const token = "tf-t0ken-9f8e7d"
	t.Setenv(secrets.EnvName("git_pass"), srv.Password)
	t.Setenv(secrets.EnvName("tf_token"), token)
	writeFile(t, filepath.Join(dir, "connector.yaml"), fmt.Sprintf("connector:\n  name: Infra\n  identifier: infra_repo\n  type: Git\n  spec:\n    url: %s/infra.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_pass}\n", srv.HTTPURL, srv.Username))
	state := filepath.Join(dir, "state", "dev.tfstate")
	src := fmt.Sprintf(`pipeline:
  name: infra
  identifier: infra
  projectIdentifier: demo
  orgIdentifier: default
  stages:
    - stage:
        name: provision
        identifier: provision
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: TerraformPlan
                  name: plan
                  identifier: plan
                  timeout: 5m
                  spec:
                    provisionerIdentifier: web_infra
                    configuration:
                      command: Apply
                      secretManagerRef: harnessSecretManager
                      exportTerraformPlanJson: true
                      configFiles:
                        store:
                          type: Git
                          spec: {connectorRef: infra_repo, gitFetchType: Branch, branch: main, folderPath: tf}
                      varFiles:
                        - varFile:
                            identifier: dev
                            type: Remote
                            spec:
                              store:
                                type: Git
                                spec: {connectorRef: infra_repo, gitFetchType: Branch, branch: main, paths: [env/dev.tfvars]}
                        - varFile:
                            identifier: secrets
                            type: Inline
                            spec:
                              content: |
                                token = "<+secrets.getValue("tf_token")>"
                      backendConfig:
                        type: Inline
                        spec:
                          content: |
                            path = "%s"
              - step:
                  type: HarnessApproval
                  name: gate
                  identifier: gate
                  timeout: 1h
                  spec:
                    approvalMessage: "Apply <+execution.steps.plan.output.add> additions?"
                    includePipelineExecutionHistory: false
                    approvers: {userGroups: [ops], minimumCount: 1, disallowPipelineExecutor: false}
              - step:
                  type: TerraformApply
                  name: apply
                  identifier: apply
                  timeout: 5m
                  spec:
                    provisionerIdentifier: web_infra
                    configuration:
                      type: InheritFromPlan
              - step:
                  type: ShellScript
                  name: report
                  identifier: report
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: echo "planned <+execution.steps.plan.output.add>/<+execution.steps.plan.output.change>/<+execution.steps.plan.output.destroy> applied <+pipeline.stages.provision.spec.execution.steps.apply.output.names> token <+execution.steps.apply.output.token>"
`, state)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), src)
	exec, err := env.starter.Start(ctx, loadRun(t, filepath.Join(dir, "pipeline.yaml")), workflows.Trigger{Type: "MANUAL", User: "executor"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "provision.gate", status.ApprovalWaiting)
	if got := stateNames(t, state); got != "" {
		t.Fatalf("the plan changed the state: %q", got)
	}
	// While the approval waits, the repository moves on: the approved plan is what applies.
	srv.Commit("infra", "main", map[string]string{"env/dev.tfvars": "replicas = 5\n"})
	if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "provision.gate", Action: "APPROVE", User: "olga", Groups: []string{"ops"}}); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "provision.plan": status.Succeeded, "provision.apply": status.Succeeded})
	if got := stateNames(t, state); got != "web-0,web-1,web-2" {
		t.Errorf("state holds %q, want the 3 planned (not the 5 committed later)", got)
	}
	report := readLog(t, exec.ID, "provision.report")
	if !strings.Contains(report, "planned 4/0/0 applied web-0,web-1,web-2 token (sensitive value)") {
		t.Errorf("report step log:\n%s", report)
	}
	plan := res.Tree.Find("provision.plan")
	js, _ := plan.Outputs["tfPlanJson"].(string)
	if !strings.Contains(js, `"resource_changes"`) || !strings.Contains(js, "(sensitive value)") {
		t.Errorf("exported plan JSON: %.300s", js)
	}
	for _, step := range []string{"provision.plan", "provision.apply"} {
		log := readLog(t, exec.ID, step)
		if strings.Contains(log, token) {
			t.Errorf("%s's log holds the secret:\n%s", step, log)
		}
		if !strings.Contains(log, "infra.git@") {
			t.Errorf("%s's log does not say which commit it used:\n%s", step, log)
		}
	}
	for name, b := range map[string][]byte{"history": rawHistory(t, exec.ID, exec.ID+"/provision"), "plan JSON": []byte(js)} {
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("the %s holds the secret", name)
		}
	}
}

// readLog returns a step's log.
func readLog(t *testing.T, execution, step string) string {
	t.Helper()
	var b bytes.Buffer
	if err := env.logs.Copy(context.Background(), &b, execution, step); err != nil {
		t.Fatalf("log of %s: %v", step, err)
	}
	return b.String()
}

// tfPipeline is one Custom stage that applies an inline configuration of replicas copies
// (prefix names them; fail adds a resource whose creation fails) to provisioner prov, then
// runs then (a step's YAML), with a TerraformRollback when the stage fails.
func tfPipeline(prov, state string, replicas int, prefix string, fail bool, then string) string {
	module := strings.ReplaceAll(tfModule, "\n", "\n                                ")
	return fmt.Sprintf(`pipeline:
  name: tf
  identifier: tf
  projectIdentifier: demo
  orgIdentifier: default
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: StageRollback}}
        spec:
          execution:
            steps:
              - step:
                  type: TerraformApply
                  name: apply
                  identifier: apply
                  timeout: 5m
                  spec:
                    provisionerIdentifier: %[1]s
                    configuration:
                      type: Inline
                      spec:
                        configFiles:
                          store:
                            type: Inline
                            spec:
                              content: |
                                %[2]s
                        varFiles:
                          - varFile: {identifier: v, type: Inline, spec: {content: "replicas = %[3]d\nprefix = \"%[4]s\"\nfail = %[7]t\n"}}
                        backendConfig: {type: Inline, spec: {content: "path = \"%[5]s\"\n"}}
%[6]s
            rollbackSteps:
              - step:
                  type: TerraformRollback
                  name: rollback
                  identifier: rollback
                  timeout: 5m
                  spec:
                    provisionerIdentifier: %[1]s
`, prov, module, replicas, prefix, state, then, fail)
}

const tfFail = `              - step: {type: ShellScript, name: verify, identifier: verify, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}`

// Rollback: a later configuration that fails its stage is rolled back to the one applied
// before it; a first configuration whose stage fails is destroyed; TerraformDestroy
// InheritFromApply removes what the last apply manages.
func TestTerraformRollbackAndDestroy(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "a.tfstate")
	run := func(src string) *workflows.PipelineResult {
		t.Helper()
		_, res := runPlan(t, env.starter, compile(t, "tf.yaml", []byte(src), load.Options{}))
		return res
	}
	res := run(tfPipeline("rb_a", state, 2, "blue", false, ""))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.apply": status.Succeeded})
	if got := stateNames(t, state); got != "blue-0,blue-1" {
		t.Fatalf("first apply: state %q", got)
	}

	res = run(tfPipeline("rb_a", state, 4, "green", false, tfFail))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.apply": status.Succeeded, "s.verify": status.Failed, "s.rollbackSteps.rollback": status.Succeeded})
	if got := stateNames(t, state); got != "blue-0,blue-1" {
		t.Errorf("after the rollback the state holds %q, want the first configuration's", got)
	}
	if got := res.Tree.Find("s.rollbackSteps.rollback").Outputs["rollback"]; got != "reapplied" {
		t.Errorf("rollback outputs %v", res.Tree.Find("s.rollbackSteps.rollback").Outputs)
	}

	// A third run rolls back to the first configuration again (the rollback's, not the
	// failed second one's).
	res = run(tfPipeline("rb_a", state, 1, "red", false, tfFail))
	if got := stateNames(t, state); got != "blue-0,blue-1" {
		t.Errorf("after the second rollback the state holds %q", got)
	}

	// An apply that fails halfway (three resources made, the fourth's creation fails) is
	// rolled back to the first configuration too.
	res = run(tfPipeline("rb_a", state, 3, "amber", true, ""))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.apply": status.Failed, "s.rollbackSteps.rollback": status.Succeeded})
	if got := stateNames(t, state); got != "blue-0,blue-1" {
		t.Errorf("after rolling back a failed apply the state holds %q", got)
	}

	// What a failed first apply made is destroyed.
	failedFirst := filepath.Join(dir, "c.tfstate")
	res = run(tfPipeline("rb_c", failedFirst, 2, "half", true, ""))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.apply": status.Failed, "s.rollbackSteps.rollback": status.Succeeded})
	if n := len(stateResources(t, failedFirst)); n != 0 {
		t.Errorf("after rolling back a failed first apply the state holds %d instances", n)
	}
	// A provisioner's first configuration, whose stage fails, is destroyed.
	first := filepath.Join(dir, "b.tfstate")
	res = run(tfPipeline("rb_b", first, 2, "new", false, tfFail))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.apply": status.Succeeded, "s.rollbackSteps.rollback": status.Succeeded})
	if got := stateNames(t, first); got != "" {
		t.Errorf("after rolling back a first apply the state holds %q", got)
	}
	if got := res.Tree.Find("s.rollbackSteps.rollback").Outputs["rollback"]; got != "destroyed" {
		t.Errorf("rollback outputs %v", res.Tree.Find("s.rollbackSteps.rollback").Outputs)
	}

	destroy := `pipeline:
  name: tfd
  identifier: tfd
  projectIdentifier: demo
  orgIdentifier: default
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: TerraformDestroy
                  name: destroy
                  identifier: destroy
                  timeout: 5m
                  spec: {provisionerIdentifier: rb_a, configuration: {type: InheritFromApply}}
`
	res = run(destroy)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.destroy": status.Succeeded})
	if got := stateNames(t, state); got != "" {
		t.Errorf("after TerraformDestroy the state holds %q", got)
	}
	// An apply that inherits a plan nobody made fails, saying what to do.
	res = run(strings.Replace(destroy, "{type: InheritFromApply}", "{type: InheritFromPlan}", 1))
	f := res.Tree.Find("s.destroy").Failure
	if f == nil || !strings.Contains(f.Message, "run a TerraformPlan with command Destroy") {
		t.Errorf("destroy without a plan: %+v", f)
	}
}

// A worker SIGKILLed while its TerraformApply runs: the step's next attempt, on a new worker
// with the same key, waits for the state lock the orphaned command holds, finds the plan
// applied (stale, and a fresh plan with nothing to do) and succeeds. Every resource was
// created once.
func TestTerraformApplyWorkerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	dir := t.TempDir()
	marks, state := filepath.Join(dir, "marks"), filepath.Join(dir, "kill.tfstate")
	module := `terraform {
  backend "local" {}
}
resource "terraform_data" "slow" {
  count = 3
  input = count.index
  provisioner "local-exec" {
    command = "echo start-${count.index} >> ` + marks + `; sleep 1; echo end-${count.index} >> ` + marks + `"
  }
}
`
	files := `configFiles: {store: {type: Inline, spec: {content: ` + strconvQuote(module) + `}}}, backendConfig: {type: Inline, spec: {content: "path = \"` + state + `\""}}`
	src := `pipeline:
  name: tfkill
  identifier: tfkill
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: TerraformPlan, name: plan, identifier: plan, timeout: 2m, spec: {provisionerIdentifier: kill, configuration: {command: Apply, secretManagerRef: sm, ` + files + `}}}
              - step: {type: TerraformApply, name: apply, identifier: apply, timeout: 2m, spec: {provisionerIdentifier: kill, configuration: {type: InheritFromPlan, commandFlags: [{commandType: APPLY, flag: "-parallelism=1"}]}}}
`
	p := compile(t, "tfkill.yaml", []byte(src), load.Options{})
	const queue = "tf-kill-test"
	startWorker := func() *exec.Cmd {
		return gantryWorker(t, bin, queue, filepath.Join(dir, "data"), "--terraform-bin", env.tofu)
	}
	first := startWorker()
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	execution, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(readFile(marks), "start-0") {
		if ctx.Err() != nil {
			t.Fatal("the apply never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	second := startWorker()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	res, err := s.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.apply": status.Succeeded})
	got := strings.Fields(readFile(marks))
	count := map[string]int{}
	for _, m := range got {
		count[m]++
	}
	for i := range 3 {
		if count[fmt.Sprintf("start-%d", i)] != 1 {
			t.Errorf("resource %d was created %d times (marks %v)", i, count[fmt.Sprintf("start-%d", i)], got)
		}
	}
	if n := len(stateResources(t, state)); n != 3 {
		t.Errorf("state holds %d instances, want 3", n)
	}
	if res.Tree.Find("s.apply").Worker == "" {
		t.Error("the tree does not say which worker applied")
	}
}

// stateResources lists the instances the state of a local backend holds.
func stateResources(t *testing.T, path string) []any {
	t.Helper()
	var st struct {
		Resources []struct {
			Instances []any `json:"instances"`
		} `json:"resources"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, r := range st.Resources {
		out = append(out, r.Instances...)
	}
	return out
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A configuration with a provider installed from the worker's filesystem mirror (built from
// the Go module proxy; no registry is reachable) and its state in S3 (versitygw), the
// backend's credentials from environment variables, the secret key a Secret: plan and apply,
// the state object in the bucket, the secret in no log and no history; then a
// TerraformDestroy plan inherited by the destroy.
func TestTerraformProviderMirrorAndS3State(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if err := srv.Bucket(ctx, "tfstate"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(secrets.EnvName("s3_secret"), s3test.SecretKey)
	out := filepath.Join(t.TempDir(), "site", "index.html")
	module := `terraform {
  required_providers {
    gantry = { source = "gantry/gantry", version = "0.1.0" }
  }
  backend "s3" {}
}
variable "greeting" {}
resource "gantry_file" "index" {
  path    = "` + out + `"
  content = var.greeting
}
output "path" { value = gantry_file.index.id }
`
	backend := fmt.Sprintf(`bucket = "tfstate"
key = "web/terraform.tfstate"
region = "%s"
endpoints = { s3 = "%s" }
use_path_style = true
skip_credentials_validation = true
skip_region_validation = true
skip_requesting_account_id = true
skip_metadata_api_check = true
`, s3test.Region, srv.Endpoint)
	files := func(greeting string) string {
		return `configFiles: {store: {type: Inline, spec: {content: ` + strconvQuote(module) + `}}}
                      varFiles: [{varFile: {identifier: v, type: Inline, spec: {content: ` + strconvQuote("greeting = \""+greeting+"\"\n") + `}}}]
                      backendConfig: {type: Inline, spec: {content: ` + strconvQuote(backend) + `}}
                      environmentVariables: [{name: AWS_ACCESS_KEY_ID, type: String, value: ` + s3test.AccessKey + `}, {name: AWS_SECRET_ACCESS_KEY, type: Secret, value: s3_secret}]`
	}
	src := func(command, greeting string, steps string) string {
		return `pipeline:
  name: tfs3
  identifier: tfs3
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: TerraformPlan
                  name: plan
                  identifier: plan
                  timeout: 2m
                  spec:
                    provisionerIdentifier: site
                    configuration:
                      command: ` + command + `
                      secretManagerRef: sm
                      ` + files(greeting) + `
` + steps
	}
	apply := "              - step: {type: TerraformApply, name: apply, identifier: apply, timeout: 2m, spec: {provisionerIdentifier: site, configuration: {type: InheritFromPlan}}}\n"
	exec, res := runPlan(t, env.starter, compile(t, "tfs3.yaml", []byte(src("Apply", "hello", apply)), load.Options{}))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.apply": status.Succeeded})
	if b, err := os.ReadFile(out); err != nil || string(b) != "hello" {
		t.Fatalf("the provider's file: %q, %v", b, err)
	}
	if got := res.Tree.Find("s.apply").Outputs["path"]; got != out {
		t.Errorf("output path %v", got)
	}
	obj, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tfstate"), Key: aws.String("web/terraform.tfstate")})
	if err != nil {
		t.Fatalf("the state is not in the bucket: %v", err)
	}
	obj.Body.Close()
	for _, step := range []string{"s.plan", "s.apply"} {
		if log := readLog(t, exec.ID, step); strings.Contains(log, s3test.SecretKey) || !strings.Contains(log, "gantry/gantry") {
			t.Errorf("%s's log (the secret key must not be there, the mirror's provider must):\n%s", step, log)
		}
	}
	if bytes.Contains(rawHistory(t, exec.ID, exec.ID+"/s"), []byte(s3test.SecretKey)) {
		t.Error("the history holds the secret key")
	}

	destroy := "              - step: {type: TerraformDestroy, name: destroy, identifier: destroy, timeout: 2m, spec: {provisionerIdentifier: site, configuration: {type: InheritFromPlan}}}\n"
	_, res = runPlan(t, env.starter, compile(t, "tfs3.yaml", []byte(src("Destroy", "hello", destroy)), load.Options{}))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.plan": status.Succeeded, "s.destroy": status.Succeeded})
	if got := res.Tree.Find("s.plan").Outputs["destroy"]; fmt.Sprint(got) != "1" {
		t.Errorf("destroy plan counts %v", res.Tree.Find("s.plan").Outputs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the destroy left the file: %v", err)
	}
}

// A Deployment stage whose environment has a provisioner: its TerraformApply runs before the
// infrastructure is rendered and its output names the namespace (`<+provisioner.namespace>`)
// the service deploys to. A later run whose stage fails rolls back its execution, then its
// provisioner: the state is the first run's again.
func TestTerraformProvisionerFillsInfrastructure(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-prov")
	infra := filepath.Join(dir, "infra-dev.yaml")
	b, err := os.ReadFile(infra)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, infra, strings.Replace(string(b), "namespace: e2e-prov-dev", "namespace: <+provisioner.namespace>", 1))
	state := filepath.Join(t.TempDir(), "prov.tfstate")
	module := `terraform {
  backend "local" {}
}
variable "ns" {}
resource "terraform_data" "namespace" { input = var.ns }
output "namespace" { value = terraform_data.namespace.output }
`
	provisioner := `            provisioner:
              steps:
                - step:
                    type: TerraformApply
                    name: Provision
                    identifier: provision
                    timeout: 2m
                    spec:
                      provisionerIdentifier: web_dev_infra
                      configuration:
                        type: Inline
                        spec:
                          configFiles: {store: {type: Inline, spec: {content: ` + strconvQuote(module) + `}}}
                          varFiles: [{varFile: {identifier: v, type: Inline, spec: {content: "ns = \"<+pipeline.variables.ns>\"\n"}}}]
                          backendConfig: {type: Inline, spec: {content: "path = \"` + state + `\"\n"}}
              rollbackSteps:
                - step: {type: TerraformRollback, name: Undo, identifier: undo, timeout: 2m, spec: {provisionerIdentifier: web_dev_infra}}
`
	src := strings.Replace(devPipeline, "            infrastructureDefinitions: [{identifier: dev_cluster}]\n",
		"            infrastructureDefinitions: [{identifier: dev_cluster}]\n"+provisioner, 1)
	src = strings.Replace(src, "    - {name: zone, type: String, value: <+input>.default(\"\")}\n",
		"    - {name: zone, type: String, value: <+input>.default(\"\")}\n    - {name: ns, type: String, value: <+input>}\n    - {name: fail, type: String, value: <+input>.default(\"0\")}\n", 1)
	src = strings.Replace(src, "script: 'echo ok'", "script: 'test <+pipeline.variables.fail> = 0'", 1)
	src = strings.Replace(src, "identifier: web_dev\n", "identifier: web_dev_provisioned\n", 1)
	file := filepath.Join(dir, "prov.yaml")
	writeFile(t, file, src)
	run := func(sets ...string) *workflows.PipelineResult {
		t.Helper()
		exec, res := runPlan(t, env.starter, loadRun(t, file, append(sets, "pipeline.variables.tag=1.27")...))
		if *updateHistories { // a stage that provisions, and one that rolls its provisioner back
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
		}
		return res
	}
	res := run("pipeline.variables.ns=e2e-prov-a")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.provisioner.provision": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	got := res.Tree.Find("deploy_dev.report").Outputs["outputVariables"].(map[string]any)["context"]
	if !strings.Contains(fmt.Sprint(got), "|e2e-prov-a|") {
		t.Errorf("the infrastructure's namespace is not the provisioner's output: %v", got)
	}
	deploymentOf(t, cs, "e2e-prov-a", "web")

	res = run("pipeline.variables.ns=e2e-prov-b", "pipeline.variables.fail=1")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev.provisioner.provision": status.Succeeded,
		"deploy_dev.report": status.Failed, "deploy_dev.rollbackSteps.rollback": status.Succeeded, "deploy_dev.provisioner.rollbackSteps.undo": status.Succeeded})
	if got := stateOutput(t, state, "namespace"); got != "e2e-prov-a" {
		t.Errorf("after the stage's rollback the provisioner's state says namespace %q, want the first run's", got)
	}
}

// stateOutput reads an output of the state of a local backend.
func stateOutput(t *testing.T, path, name string) string {
	t.Helper()
	var st struct {
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(st.Outputs[name].Value)
}
