package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// docker-compose.yml cannot run here (no Docker engine). This checks its shape: images pinned,
// and every gantry service's command and environment are ones this binary accepts.
func TestDockerCompose(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	known := envNames(t)
	gantry := 0
	for name, svc := range doc.Services {
		if svc.Image == "" || !strings.Contains(svc.Image, ":") || strings.HasSuffix(svc.Image, ":latest") {
			t.Errorf("%s: image %q is not pinned", name, svc.Image)
		}
		if svc.Build == nil {
			continue
		}
		gantry++
		root := newRoot()
		cmd, rest, err := root.Find(svc.Command)
		if err != nil || cmd == root {
			t.Errorf("%s: command %v is not a gantry command: %v", name, svc.Command, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v: %v", name, svc.Command, err)
			continue
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("%s: %v: %v", name, svc.Command, err)
		}
		for k := range svc.Environment {
			if strings.HasPrefix(k, "GANTRY_") && !known[k] {
				t.Errorf("%s: environment %s is not read by gantry", name, k)
			}
		}
		if svc.Environment["GANTRY_TEMPORAL_ADDRESS"] != "temporal:7233" {
			t.Errorf("%s does not point at the temporal service", name)
		}
	}
	if gantry < 3 {
		t.Errorf("want two workers and a server built from this repository, found %d gantry services", gantry)
	}
	if _, ok := doc.Services["temporal-ui"]; !ok {
		t.Error("no Temporal UI service")
	}
}

// envNames are the GANTRY_* variables the source reads.
func envNames(t *testing.T) map[string]bool {
	re := regexp.MustCompile(`"(GANTRY_[A-Z_]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != ".." && (d.Name() == "hack" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
