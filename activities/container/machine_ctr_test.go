package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/internal/ctrtest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/plan"
)

// Steps that name an image run in containers on the build machine, through a real containerd:
// the image pulled with the step's connector's credentials, the workspace at /harness, output
// variables as in a pod; a Background step is reachable by its identifier from later steps; a
// step past its timeout leaves no container; wrong credentials fail with the registry's
// answer; the workspace a dead worker left is removed with every container and the stage's
// network by the next worker (the stage's end does the same: e2e).
func TestMachineContainerSteps(t *testing.T) {
	ctrd := ctrtest.Start(t)
	reg := registrytest.Start(t)
	image := reg.Host + "/tools/busybox:1"
	ctrtest.PushBusybox(t, image, &authn.Basic{Username: registrytest.Username, Password: registrytest.Password})
	t.Setenv("GANTRY_SECRET_REG_PW", registrytest.Password)
	t.Setenv("GANTRY_SECRET_BAD_PW", "wrong")
	m, store := testMachine(t)
	m.Containers = &Containers{Address: ctrd.Address, Helper: ctrtest.Helper(t, t.TempDir()), Subnet: "10.214.0.0/24"}
	t.Cleanup(m.Containers.Close)
	pod := &activities.PodInput{ExecutionID: "e-1", Name: "gantry-ctr-1", Pod: plan.Pod{Machine: &plan.Machine{},
		SharedPaths: []any{"/cache"},
		Registries: map[string]plan.RegistryConnector{
			"reg": {ID: "reg", URL: reg.URL, Username: registrytest.Username, PasswordRef: "reg_pw"},
			"bad": {ID: "bad", URL: reg.URL, Username: registrytest.Username, PasswordRef: "bad_pw"},
		}}}
	containers := func() []string {
		out, err := ctrd.Ctr("-n", ContainerNamespace, "containers", "ls", "-q")
		if err != nil {
			t.Fatalf("ctr: %v %s", err, out)
		}
		return strings.Fields(out)
	}

	_, err := machineStepAt(t, m, pod, "s.pull", "Run", map[string]any{"image": image, "connectorRef": "bad", "command": "true"}, time.Minute)
	if f := activities.Classify(err); f == nil || f.Category != activities.Authentication || !strings.Contains(f.Message, image) {
		t.Fatalf("failure %+v, want the registry's refusal", f)
	}

	res, err := machineStepAt(t, m, pod, "s.build", "Run", map[string]any{"image": image, "connectorRef": "reg", "shell": "Sh",
		"command":         `echo "ws=$HARNESS_WORKSPACE pwd=$PWD ci=$CI"; echo made > /harness/made; echo kept > /cache/kept; X=42`,
		"outputVariables": []any{map[string]any{"name": "X"}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if outs := res.Outputs["outputVariables"].(map[string]any); outs["X"] != "42" {
		t.Errorf("outputs %v", outs)
	}
	if b, err := os.ReadFile(filepath.Join(pod.Workspace, "made")); err != nil || string(b) != "made\n" {
		t.Errorf("the workspace file: %q %v", b, err)
	}
	b, _ := os.ReadFile(store.Path("e-1", "s.build"))
	if !strings.Contains(string(b), "ws=/harness pwd=/harness ci=true") {
		t.Errorf("log:\n%s", b)
	}

	if _, err := machineStepAt(t, m, pod, "s.svc", "Background", map[string]any{"image": image, "connectorRef": "reg",
		"command": "mkdir -p /www && echo pong > /www/ping && exec httpd -f -p 8080 -h /www"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = machineStepAt(t, m, pod, "s.probe", "Run", map[string]any{"image": image, "connectorRef": "reg",
		"command": "cat /cache/kept; for i in $(seq 1 100); do wget -qO- http://svc:8080/ping && exit 0; sleep 0.1; done; exit 1"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(store.Path("e-1", "s.probe"))
	if !strings.Contains(string(b), "kept\n") || !strings.Contains(string(b), "pong") {
		t.Errorf("the shared path and the service by its name, log:\n%s", b)
	}

	_, err = machineStepAt(t, m, pod, "s.slow", "Run", map[string]any{"image": image, "connectorRef": "reg", "command": "sleep 300"}, 2*time.Second)
	if f := activities.Classify(err); f == nil || f.Category != activities.Timeout {
		t.Fatalf("failure %+v, want Timeout", f)
	}
	if got := containers(); len(got) != 1 {
		t.Errorf("containers %v, want only the Background step's", got)
	}

	// The worker dies (its workspace lock is free): the next worker on the machine removes the
	// stage's containers, its network and its workspace.
	m.mu.Lock()
	m.live[pod.Name].lock.Close()
	m.mu.Unlock()
	next, _ := testMachine(t)
	next.Root, next.Containers = m.Root, &Containers{Address: ctrd.Address, Helper: m.Containers.Helper, Subnet: m.Containers.Subnet}
	t.Cleanup(next.Containers.Close)
	next.Sweep()
	if got := containers(); len(got) != 0 {
		t.Errorf("containers %v after the next worker's sweep", got)
	}
	if _, err := os.Stat(filepath.Dir(pod.Workspace)); !os.IsNotExist(err) {
		t.Errorf("workspace still there: %v", err)
	}
}
