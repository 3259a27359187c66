package terraform

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/internal/testproc"
)

// tofu builds OpenTofu once (cached) and returns the binary.
func tofu(t *testing.T) string {
	t.Helper()
	bin, err := testproc.Built("tofu")
	if err != nil {
		t.Fatalf("build OpenTofu: %v", err)
	}
	return bin
}

// config has three terraform_data resources named by a variable, and outputs.
const config = `
terraform {
  backend "local" {}
}
variable "prefix" { default = "dev" }
variable "token" {
  default   = ""
  sensitive = true
}
resource "terraform_data" "r" {
  count = 3
  input = "${var.prefix}-${count.index}"
}
output "names" { value = terraform_data.r[*].output }
output "workspace" { value = terraform.workspace }
output "token" {
  value     = var.token
  sensitive = true
}
`

// A plan made, applied exactly once (the same plan again is stale), read back as outputs, in a
// workspace with the state where the backend configuration says; then destroyed.
func TestPlanApplyOutputsDestroy(t *testing.T) {
	bin := tofu(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	states := filepath.Join(t.TempDir(), "states")
	backend := filepath.Join(dir, "backend.hcl")
	vars := filepath.Join(dir, "prod.tfvars")
	_ = os.WriteFile(backend, []byte(`workspace_dir = "`+states+`"`+"\n"), 0o600)
	_ = os.WriteFile(vars, []byte("prefix = \"prod\"\n"), 0o600)
	var log bytes.Buffer
	r := &Runner{Bin: bin, Dir: dir, Log: &log, Env: []string{"TF_VAR_token=s3cr3t"},
		Flags: map[string]string{"INIT": "-lock-timeout=5s", "PLAN": "-parallelism=2 -lock-timeout=5s", "APPLY": "-parallelism=2", "DESTROY": "-lock=true"}}
	ctx := context.Background()
	if err := r.Init(ctx, backend); err != nil {
		t.Fatal(err)
	}
	if err := r.Workspace(ctx, "staging"); err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(ctx, PlanOptions{VarFiles: []string{vars}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Add != 3 || p.Change != 0 || p.Destroy != 0 || !bytes.Contains(p.JSON, []byte(`"prod-2"`)) {
		t.Fatalf("plan: +%d ~%d -%d\n%s", p.Add, p.Change, p.Destroy, p.JSON)
	}
	if err := r.Apply(ctx, p.File); err != nil {
		t.Fatal(err)
	}
	// The same plan again: the state moved on, so the binary refuses it and nothing is applied
	// twice (what a retried Apply step relies on).
	if err := r.Apply(ctx, p.File); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("a second apply of the same plan: %v", err)
	}
	out, err := r.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := out["names"].Value.([]any); len(names) != 3 || names[0] != "prod-0" || out["workspace"].Value != "staging" || !out["token"].Sensitive {
		t.Fatalf("outputs: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(states, "staging", "terraform.tfstate")); err != nil {
		t.Errorf("the staging workspace's state is not where the backend configuration put it: %v", err)
	}
	if strings.Contains(log.String(), "s3cr3t") {
		t.Error("a sensitive variable's value reached the log")
	}

	// A targeted plan, then the destroy.
	p, err = r.Plan(ctx, PlanOptions{VarFiles: []string{vars}, Targets: []string{"terraform_data.r[0]"}, Destroy: true, SkipRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Destroy != 1 || p.Add != 0 {
		t.Fatalf("targeted destroy plan: +%d -%d", p.Add, p.Destroy)
	}
	p, err = r.Plan(ctx, PlanOptions{VarFiles: []string{vars}, Destroy: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Destroy != 3 {
		t.Fatalf("destroy plan: -%d", p.Destroy)
	}
	if err := r.Apply(ctx, p.File); err != nil {
		t.Fatal(err)
	}
	if out, err := r.Outputs(ctx); err != nil || len(out) != 0 {
		t.Fatalf("after destroy: %+v %v", out, err)
	}
}

// A failing command names the binary, the command and the folder, with the binary's error.
func TestFailureSaysWhat(t *testing.T) {
	bin := tofu(t)
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`resource "terraform_data" "x" { input = var.missing }`), 0o600)
	r := &Runner{Bin: bin, Dir: dir}
	ctx := context.Background()
	if err := r.Init(ctx, ""); err != nil {
		t.Fatal(err)
	}
	_, err := r.Plan(ctx, PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "tofu plan in "+dir) || !strings.Contains(err.Error(), "Reference to undeclared input variable") {
		t.Fatalf("%v", err)
	}
}

// A plan's JSON holds sensitive values in plain text, some of them unmarked (terraform_data's
// output of a sensitive input, in the prior state); Redact masks them all, old and new, and
// the secrets the caller names, and keeps everything else.
func TestRedactMasksEverySensitiveValue(t *testing.T) {
	bin := tofu(t)
	dir := t.TempDir()
	_ = os.MkdirAll(filepath.Join(dir, "m"), 0o700)
	_ = os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`
variable "token" { sensitive = true }
variable "api_key" { default = "" }
resource "terraform_data" "a" { input = var.token }
resource "terraform_data" "plain" { input = "visible-${var.api_key}" }
module "m" {
  source = "./m"
  t      = var.token
}
output "o" {
  value     = var.token
  sensitive = true
}
`), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "m", "main.tf"), []byte(`
variable "t" {}
resource "terraform_data" "b" { input = { k = var.t, plain = "kept" } }
`), 0o600)
	ctx := context.Background()
	r := &Runner{Bin: bin, Dir: dir, Env: []string{"TF_VAR_token=0ld-s3cr3t", "TF_VAR_api_key=k3y-xyz"}}
	if err := r.Init(ctx, ""); err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(ctx, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(ctx, p.File); err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"TF_VAR_token=n3w-s3cr3t", "TF_VAR_api_key=k3y-xyz"}
	if p, err = r.Plan(ctx, PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(p.JSON, []byte("0ld-s3cr3t")) || !bytes.Contains(p.JSON, []byte("n3w-s3cr3t")) {
		t.Fatal("the plan's JSON does not hold the secrets this test expects it to (did the binary change?)")
	}
	red, err := Redact(p.JSON, "k3y-xyz")
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"0ld-s3cr3t", "n3w-s3cr3t", "k3y-xyz"} {
		if bytes.Contains(red, []byte(secret)) {
			t.Errorf("the redacted plan holds %s:\n%s", secret, red)
		}
	}
	for _, kept := range []string{"kept", "visible-", `"resource_changes"`, "terraform_data.plain", Masked} {
		if !bytes.Contains(red, []byte(kept)) {
			t.Errorf("the redacted plan lost %s:\n%s", kept, red)
		}
	}
}

// commandFlags reach their command: a PLAN flag supplies the variable the configuration lacks.
func TestCommandFlagsReachTheirCommand(t *testing.T) {
	bin := tofu(t)
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`variable "missing" {}
resource "terraform_data" "x" { input = var.missing }`), 0o600)
	r := &Runner{Bin: bin, Dir: dir, Flags: map[string]string{"PLAN": "-var=missing=from-flag", "APPLY": "-parallelism=1"}}
	ctx := context.Background()
	if err := r.Init(ctx, ""); err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(ctx, PlanOptions{})
	if err != nil || !bytes.Contains(p.JSON, []byte("from-flag")) {
		t.Fatalf("%v", err)
	}
	if err := r.Apply(ctx, p.File); err != nil {
		t.Fatal(err)
	}
}
