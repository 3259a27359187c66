package cli

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

func TestInitStrategiesValidate(t *testing.T) {
	for _, s := range Strategies {
		src, err := Scaffold{Strategy: s, Name: "web " + s, ID: "web_" + s, Service: "web", Environment: "dev", Infrastructure: "dev_cluster"}.Render()
		if err != nil {
			t.Fatal(err)
		}
		r := load.Bytes(s+".yaml", src, load.Options{ForRun: true, EntityDirs: []string{"../examples/k8s"}})
		if !r.OK() {
			t.Errorf("%s scaffold:\n%s", s, r.Diags.Render(r.Sources))
			continue
		}
		if len(r.Plan.Stages[0].Rollback) == 0 {
			t.Errorf("%s scaffold has no rollback steps", s)
		}
	}
	if _, err := (Scaffold{Strategy: "recreate"}).Render(); err == nil || !strings.Contains(err.Error(), "rolling, canary, bluegreen") {
		t.Errorf("unknown strategy: %v", err)
	}
}
