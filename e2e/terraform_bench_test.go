package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// bench20 is a root module of 20 terraform_data resources.
const bench20 = `terraform {
  backend "local" {}
}
resource "terraform_data" "r" {
  count = 20
  input = "r-${count.index}"
}
`

// BenchmarkTerraformApply20 is a pipeline whose TerraformApply (Inline) creates 20 resources in
// a fresh state: the configuration written, init, plan, apply, outputs and the provisioner's
// records, through the engine. BenchmarkTofuByHand20 is the same binary run by hand.
func BenchmarkTerraformApply20(b *testing.B) {
	dir := b.TempDir()
	src := func(i int) string {
		return fmt.Sprintf(`pipeline:
  name: tfbench
  identifier: tfbench
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: TerraformApply, name: apply, identifier: apply, timeout: 5m, spec: {provisionerIdentifier: bench_%[1]d, configuration: {type: Inline, spec: {configFiles: {store: {type: Inline, spec: {content: %[2]s}}}, backendConfig: {type: Inline, spec: {content: "path = \"%[3]s\""}}}}}}
`, i, strconvQuote(bench20), filepath.Join(dir, fmt.Sprintf("s%d.tfstate", i)))
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := compile(b, "tfbench.yaml", []byte(src(i)), load.Options{})
		b.StartTimer()
		runSucceeds(b, p, 5*time.Minute)
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/apply")
}

func BenchmarkTofuByHand20(b *testing.B) {
	dir := b.TempDir()
	run := func(wd string, args ...string) {
		cmd := exec.Command(env.tofu, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	start := time.Now()
	for i := 0; i < b.N; i++ {
		wd := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(wd, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(bench20), 0o644); err != nil {
			b.Fatal(err)
		}
		run(wd, "init", "-input=false", "-no-color", "-backend-config=path="+filepath.Join(dir, fmt.Sprintf("s%d.tfstate", i)))
		run(wd, "plan", "-input=false", "-no-color", "-out=p.tfplan")
		run(wd, "apply", "-input=false", "-no-color", "-auto-approve", "p.tfplan")
		run(wd, "output", "-json")
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/apply")
}
