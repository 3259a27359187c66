package container

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/ctrtest"
	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/ociimage"
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
	pod := &contract.PodInput{ExecutionID: "e-1", Name: "gantry-ctr-1", Pod: plan.Pod{Machine: &plan.Machine{},
		SharedPaths: []any{"/cache"},
		Registries: map[string]plan.RegistryConnector{
			"reg": {ID: "reg", URL: reg.URL, Username: registrytest.Username, PasswordRef: "reg_pw"},
			"bad": {ID: "bad", URL: reg.URL, Username: registrytest.Username, PasswordRef: "bad_pw"},
		}}}
	t.Cleanup(func() { _ = m.WorkspaceStop(context.Background(), *pod) }) // whatever failed: its network's mount goes
	containers := func() []string {
		out, err := ctrd.Ctr("-n", ContainerNamespace, "containers", "ls", "-q")
		if err != nil {
			t.Fatalf("ctr: %v %s", err, out)
		}
		return strings.Fields(out)
	}

	_, err := machineStepAt(t, m, pod, "s.pull", "Run", map[string]any{"image": image, "connectorRef": "bad", "command": "true"}, time.Minute)
	if f := contract.Classify(err); f == nil || f.Category != contract.Authentication || !strings.Contains(f.Message, image) {
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

	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	hostPort := strconv.Itoa(ports[0])
	if _, err := machineStepAt(t, m, pod, "s.svc", "Background", map[string]any{"image": image, "connectorRef": "reg",
		"command":      "mkdir -p /www && echo pong > /www/ping && exec httpd -f -p 8080 -h /www",
		"portBindings": map[string]any{hostPort: 8080}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Its portBindings: a program on the machine (a step without an image) reaches it at
	// localhost:HOST_PORT; a second binding of the port fails that step, naming the port.
	var got string
	for deadline := time.Now().Add(20 * time.Second); got != "pong\n" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get("http://127.0.0.1:" + hostPort + "/ping"); err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			got = string(b)
		}
	}
	if got != "pong\n" {
		t.Fatalf("localhost:%s answered %q, want the service's pong", hostPort, got)
	}
	_, err = machineStepAt(t, m, pod, "s.svc2", "Background", map[string]any{"image": image, "connectorRef": "reg",
		"command": "exec sleep 300", "portBindings": map[string]any{hostPort: "80"}}, time.Minute)
	if f := contract.Classify(err); f == nil || !strings.Contains(f.Message, "host port "+hostPort) {
		t.Fatalf("failure %+v, want the taken host port named", f)
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
	if f := contract.Classify(err); f == nil || f.Category != contract.Timeout {
		t.Fatalf("failure %+v, want Timeout", f)
	}
	// A step's container is removed just after the step reports.
	for deadline := time.Now().Add(30 * time.Second); len(containers()) > 1 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
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

// A BuildAndPush step on a build machine builds the workspace's Dockerfile with BuildKit in
// its image (privileged, in the stage's network) and pushes to the connector's registry, as
// in a pod: the pushed image is the step's published artifact.
func TestMachineBuildAndPush(t *testing.T) {
	ctrd := ctrtest.Start(t)
	reg := registrytest.StartExposed(t)
	auth := &authn.Basic{Username: registrytest.Username, Password: registrytest.Password}
	kit, kitConfig, err := ociimage.BuildKitImage()
	if err != nil {
		t.Fatal(err)
	}
	kitImage := reg.Host + "/gantry-buildkit:1"
	if err := ociimage.PushAs(kitImage, kit, kitConfig, auth); err != nil {
		t.Fatal(err)
	}
	// The BuildKit image is the machine's own (--buildkit-image): pulled here beforehand, as
	// this registry wants credentials.
	if out, err := ctrd.Ctr("-n", ContainerNamespace, "images", "pull", "--plain-http", "--user",
		registrytest.Username+":"+registrytest.Password, kitImage); err != nil {
		t.Fatalf("ctr pull: %v\n%s", err, out)
	}
	t.Setenv("GANTRY_SECRET_REG_PW", registrytest.Password)
	m, _ := testMachine(t)
	const subnet, gateway = "10.215.0.0/24", "10.215.0.1"
	m.Containers = &Containers{Address: ctrd.Address, Helper: ctrtest.Helper(t, t.TempDir()), Subnet: subnet, BuildKitImage: kitImage}
	t.Cleanup(m.Containers.Close)
	pushTo := "http://" + gateway + ":" + strconv.Itoa(reg.Port)
	pod := &contract.PodInput{ExecutionID: "e-1", Name: "gantry-build-1", Pod: plan.Pod{Machine: &plan.Machine{Containers: true},
		Registries: map[string]plan.RegistryConnector{"reg": {ID: "reg", URL: pushTo, Username: registrytest.Username, PasswordRef: "reg_pw"}}}}
	t.Cleanup(func() { _ = m.WorkspaceStop(context.Background(), *pod) }) // whatever failed: its network's mount goes
	if _, err := machineStepAt(t, m, pod, "s.write", "Run", map[string]any{"shell": "Sh",
		"command": `printf 'FROM scratch\nCOPY hello.txt /hello.txt\n' > Dockerfile; echo hello > hello.txt`}, time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err := machineStepAt(t, m, pod, "s.image", "BuildAndPushDockerRegistry", map[string]any{"connectorRef": "reg", "repo": "app", "tags": []any{"7"}}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(reg.Host+"/app:7", name.Insecure)
	desc, err := remote.Head(ref, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("the pushed image: %v (outputs %v)", err, res.Outputs)
	}
	published := res.Outputs["stepArtifacts"].(map[string]any)["publishedImageArtifacts"].([]any)
	if got := published[0].(map[string]any)["digest"]; got != desc.Digest.String() {
		t.Errorf("digest output %v, the registry has %s (outputs %v)", got, desc.Digest, res.Outputs)
	}
	if err := m.WorkspaceStop(t.Context(), *pod); err != nil {
		t.Fatal(err)
	}
}
