package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gantry-cd/gantry/activities/container"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/ctrtest"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// Build machines: CI stages that name a runtime run on workers started as build machines,
// their steps without an image on the machine itself, in a workspace the stage keeps from its
// first step to its last.

var (
	helperOnce sync.Once
	helperBin  string
	helperErr  error
)

// stepHelper builds gantry-helper once for the package's build machines.
func stepHelper(t testing.TB) []string {
	t.Helper()
	helperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gantry-helper-")
		if err != nil {
			helperErr = err
			return
		}
		helperBin = filepath.Join(dir, "gantry-helper")
		cmd := exec.Command("go", "build", "-o", helperBin, "./cmd/gantry-helper")
		cmd.Dir, cmd.Env = testproc.RepoRoot(), append(os.Environ(), "CGO_ENABLED=0") // static: it runs in containers too
		if out, err := cmd.CombinedOutput(); err != nil {
			helperErr = err
			t.Logf("%s", out)
		}
	})
	if helperErr != nil {
		t.Fatalf("build gantry-helper: %v", helperErr)
	}
	return []string{helperBin}
}

// buildMachine starts the pipelines' worker of queue as a build machine taking maxStages, and
// returns its workspace root.
func buildMachine(t testing.TB, queue string, maxStages int) string {
	t.Helper()
	dir := t.TempDir()
	p, err := worker.Start(env.client, worker.Options{TaskQueue: queue, Internal: env.internal, Logs: env.logs, WorkDir: dir, BuildMachine: true,
		MaxStages: maxStages, StepHelper: stepHelper(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return filepath.Join(dir, "build")
}

// extraMachine starts one more build machine (its workers only) on queue.
func extraMachine(t *testing.T, queue string, maxStages int) string {
	t.Helper()
	dir := t.TempDir()
	ws, err := worker.BuildMachines(env.client, worker.Options{TaskQueue: queue, Logs: env.logs, WorkDir: dir, MaxStages: maxStages, StepHelper: stepHelper(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	return filepath.Join(dir, "build")
}

// machineStage is a `runtime: Cloud` CI stage whose Run steps name no image, as the
// reference's hosted-machine pipelines write them.
func machineStage(id, steps string) string {
	return `        - stage:
            name: ` + id + `
            identifier: ` + id + `
            type: CI
            spec:
              cloneCodebase: false
              platform: {os: Linux, arch: Amd64}
              runtime: {type: Cloud, spec: {}}
              execution:
                steps:
` + steps
}

func runStep(id, shell, command string) string {
	return `                  - step: {type: Run, name: ` + id + `, identifier: ` + id + `, spec: {shell: ` + shell + `, command: ` + strconv.Quote(command) + `, outputVariables: [{name: WS}]}}
`
}

func machinePipeline(id string, stages ...string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - parallel:
` + strings.Join(stages, "")
}

func machineStarter(queue string) *starter.Starter {
	return &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
}

var onMachines = load.Options{BuildInfra: &pipeline.BuildInfra{Machines: true}}

// Two parallel stages on two build machines (one stage each) run at the same time, each in a
// workspace of its own that its steps share: a file one step writes, the next reads; an
// output variable crosses steps; the workspaces are removed when the stages end.
func TestBuildMachinesRunStagesInParallel(t *testing.T) {
	queue := "build-machines-parallel"
	rootA := buildMachine(t, queue, 1)
	rootB := extraMachine(t, queue, 1)
	stage := func(id string) string {
		return machineStage(id,
			runStep("write", "Bash", `echo `+id+` > mine.txt; date +%s.%N > start; sleep 2; WS=$HARNESS_WORKSPACE`)+
				runStep("read", "Sh", `test "$(cat mine.txt)" = `+id+` && test "$PWD" = "<+execution.steps.write.output.outputVariables.WS>"; WS=$PWD; date +%s.%N`))
	}
	p := compile(t, "machines.yaml", []byte(machinePipeline("machines_parallel", stage("a"), stage("b"))), onMachines)
	_, res := runPlan(t, machineStarter(queue), p)
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s: %s", res.Status, dumpTree(res.Tree))
	}
	a, b := res.Tree.Find("a"), res.Tree.Find("b")
	wsA := res.Tree.Find("a.read").Outputs["outputVariables"].(map[string]any)["WS"].(string)
	wsB := res.Tree.Find("b.read").Outputs["outputVariables"].(map[string]any)["WS"].(string)
	if wsA == wsB || !(strings.HasPrefix(wsA, rootA) && strings.HasPrefix(wsB, rootB) || strings.HasPrefix(wsA, rootB) && strings.HasPrefix(wsB, rootA)) {
		t.Errorf("workspaces %s and %s: want one on each machine (%s, %s)", wsA, wsB, rootA, rootB)
	}
	if !a.StartedAt.Before(*b.EndedAt) || !b.StartedAt.Before(*a.EndedAt) {
		t.Errorf("stages ran one after the other: a %v-%v, b %v-%v", a.StartedAt, a.EndedAt, b.StartedAt, b.EndedAt)
	}
	for _, ws := range []string{wsA, wsB} {
		if _, err := os.Stat(ws); !os.IsNotExist(err) {
			t.Errorf("workspace %s is still there after the stage (%v)", ws, err)
		}
	}
}

// A build machine taking one stage at a time queues the second of two parallel stages,
// RESOURCE_WAITING in the tree, until the first ends.
func TestBuildMachineMaxStagesQueues(t *testing.T) {
	queue := "build-machines-max-stages"
	buildMachine(t, queue, 1)
	stage := func(id string) string { return machineStage(id, runStep("work", "Sh", "sleep 2; WS=$PWD")) }
	p := compile(t, "machines.yaml", []byte(machinePipeline("machines_queue", stage("a"), stage("b"))), onMachines)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := machineStarter(queue)
	exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	sawWaiting := false
	for !sawWaiting && ctx.Err() == nil {
		tree, err := s.Tree(ctx, exec.ID)
		if err == nil {
			for _, id := range []string{"a", "b"} {
				if n := tree.Find(id); n != nil && n.Status == status.ResourceWaiting && n.Resource != nil && n.Resource.Kind == workflows.LockMachine {
					sawWaiting = true
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := s.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s: %s", res.Status, dumpTree(res.Tree))
	}
	if !sawWaiting {
		t.Error("no stage was seen waiting for the build machine")
	}
	// The stage that got the machine first is the one whose step ran first: both stages start
	// at once, and which of them queues is up to the lock, not to their start times.
	a, b := res.Tree.Find("a"), res.Tree.Find("b")
	first, second := a, b
	if b.Find("b.work").StartedAt.Before(*a.Find("a.work").StartedAt) {
		first, second = b, a
	}
	if second.Find(second.Path + ".work").StartedAt.Before(*first.EndedAt) {
		t.Errorf("the second stage's step started before the first stage ended")
	}
	if !strings.Contains(strings.Join(second.Notes, ";"), "for a build machine") {
		t.Errorf("the queued stage's notes %v do not say it waited", second.Notes)
	}
}

// Aborting a stage mid-step ends the step's whole process group (a child it started in the
// background included) and removes the workspace: a step that runs as a regular activity, and
// one short enough for the fast path (a local activity on the machine that runs the stage).
func TestBuildMachineAbortKillsProcessGroup(t *testing.T) {
	for _, timeout := range []string{"10m", "30s"} {
		t.Run(timeout, func(t *testing.T) {
			queue := "build-machines-abort-" + timeout
			root := buildMachine(t, queue, 1)
			pidFile := filepath.Join(t.TempDir(), "pid")
			step := strings.Replace(runStep("hang", "Bash", "sleep 300 & echo $! > "+pidFile+"; wait"), "identifier: hang,", "identifier: hang, timeout: "+timeout+",", 1)
			p := compile(t, "machines.yaml", []byte(machinePipeline("machines_abort_"+strings.TrimSuffix(timeout, "s"), machineStage("a", step))), onMachines)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := machineStarter(queue)
			exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			pid := waitPid(ctx, t, pidFile)
			if err := s.Abort(ctx, exec.ID, "test", "stop"); err != nil {
				t.Fatal(err)
			}
			res, err := s.Result(ctx, exec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != status.Aborted {
				t.Fatalf("pipeline %s after the abort", res.Status)
			}
			waitGone(ctx, t, pid)
			waitEmpty(ctx, t, root)
		})
	}
}

// A build machine's worker killed with SIGKILL mid-step leaves no process behind (the stage's
// fork server ends its process group when the worker's end of its lifeline closes); the stage
// fails naming the lost machine, and the next worker on the machine removes the workspace.
func TestBuildMachineWorkerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	queue := "build-machines-kill"
	data := filepath.Join(t.TempDir(), "data")
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := compile(t, "machines.yaml", []byte(machinePipeline("machines_kill",
		machineStage("a", runStep("hang", "Bash", "sleep 300 & echo $! > "+pidFile+"; wait")))), onMachines)
	first := gantryWorker(t, bin, queue, data, "--build-machine")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := machineStarter(queue)
	exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitPid(ctx, t, pidFile)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	waitGone(ctx, t, pid)
	root := filepath.Join(data, "work", "build")
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Fatalf("%d workspaces under %s after the kill, want the dead worker's one", len(entries), root)
	}
	second := gantryWorker(t, bin, queue, data, "--build-machine")
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	res, err := s.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Tree.Find("a.hang").Failure
	if res.Status != status.Failed || f == nil || f.Category != contract.DelegateRestart || !strings.Contains(f.Message, "build machine") {
		t.Fatalf("pipeline %s, step failure %+v: want the lost machine named", res.Status, f)
	}
	waitEmpty(ctx, t, root)
}

func waitPid(ctx context.Context, t *testing.T, file string) int {
	t.Helper()
	for ctx.Err() == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(readFile(file))); err == nil && pid > 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the step never started its child")
	return 0
}

// waitGone waits until process pid has ended (a zombie counts as ended: nobody may reap it).
func waitGone(ctx context.Context, t *testing.T, pid int) {
	t.Helper()
	for ctx.Err() == nil {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d the step started still runs", pid)
}

// waitEmpty waits until a build machine's workspace root holds no workspace.
func waitEmpty(ctx context.Context, t *testing.T, root string) {
	t.Helper()
	for ctx.Err() == nil {
		if entries, err := os.ReadDir(root); err == nil && len(entries) == 0 || os.IsNotExist(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	entries, _ := os.ReadDir(root)
	t.Fatalf("%d workspaces left under %s", len(entries), root)
}

// A `runtime: Cloud` stage as a team writes it for hosted machines: the codebase cloned from
// the Git server into the build machine's workspace, a step without an image reading it with
// the machine's own tools (on the fast path: the machine runs the stage's workflow),
// `<+codebase.*>` and the DRONE_ variables naming the commit.
func TestBuildMachineClonesCodebase(t *testing.T) {
	srv := gittest.Start(t)
	commit := srv.NewRepo("app", map[string]string{"hello.txt": "hello from the codebase\n"})
	t.Setenv(secrets.EnvName("machine_clone_token"), srv.Password)
	dir := t.TempDir()
	files := map[string]string{
		"git.yaml": fmt.Sprintf("connector:\n  name: Repo\n  identifier: app_git\n  type: Git\n  spec:\n    url: %s/app.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: machine_clone_token}\n", srv.HTTPURL, srv.Username),
		"p.yaml": `pipeline:
  name: machine clone
  identifier: machine_clone
  properties:
    ci:
      codebase: {connectorRef: app_git, build: {type: branch, spec: {branch: main}}}
  stages:
    - stage:
        name: build
        identifier: build
        type: CI
        spec:
          cloneCodebase: true
          runtime: {type: Cloud, spec: {}}
          execution:
            steps:
              - step:
                  type: Run
                  name: read
                  identifier: read
                  timeout: 1m
                  spec:
                    shell: Bash
                    command: |
                      TEXT=$(cat hello.txt)
                      HEAD=$(git rev-parse HEAD)
                      SHA=<+codebase.commitSha>
                      DRONE="$DRONE_COMMIT_SHA $DRONE_BRANCH $DRONE_REPO_NAME"
                    outputVariables: [{name: TEXT}, {name: HEAD}, {name: SHA}, {name: DRONE}]
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := onMachines
	opts.ForRun = true
	r, err := load.File(filepath.Join(dir, "p.yaml"), opts)
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	queue := "build-machines-clone"
	buildMachine(t, queue, 1)
	exec, res := runPlan(t, machineStarter(queue), r.Plan)
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s: %s", res.Status, dumpTree(res.Tree))
	}
	if *updateHistories { // a stage on a build machine: its session, and a step on the fast path
		recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
	}
	outs := res.Tree.Find("build.read").Outputs["outputVariables"].(map[string]any)
	if outs["TEXT"] != "hello from the codebase" || outs["HEAD"] != commit || outs["SHA"] != commit || outs["DRONE"] != commit+" main app" {
		t.Errorf("outputs %v, want the codebase at %s", outs, commit)
	}
}

// A `runtime: Docker` stage whose steps name images, on a build machine with containerd: a
// step without an image writes the workspace on the machine, a Background service in a
// container answers later steps by its identifier, a step in a container reads the workspace
// and publishes an output; the images come from a registry behind the connector's
// credentials. When the stage ends no container is left; an abort mid-step removes the
// step's container and the workspace.
func TestBuildMachineRunsContainers(t *testing.T) {
	queue := "build-machines-containers"
	cm := containerMachine(t, queue)
	root, image := cm.root, cm.image
	containers := func() []string {
		out, err := cm.ctrd.Ctr("-n", container.ContainerNamespace, "containers", "ls", "-q")
		if err != nil {
			t.Fatalf("ctr: %v %s", err, out)
		}
		return strings.Fields(out)
	}
	withImage := func(id, typ, command, extra string) string { return imageStep(image, id, typ, command, extra) }
	loadFile := cm.load
	stage := strings.Replace(machineStage("build",
		runStep("prepare", "Sh", "echo from-the-machine > note.txt; WS=$PWD")+
			withImage("db", "Background", "mkdir -p /www && echo ready > /www/ping && exec httpd -f -p 5432 -h /www", "")+
			withImage("check", "Run", "for i in $(seq 1 100); do if wget -qO- http://db:5432/ping > got; then break; fi; sleep 0.1; done; PING=$(cat got); NOTE=$(cat /harness/note.txt)",
				", outputVariables: [{name: PING}, {name: NOTE}]")), "type: Cloud", "type: Docker", 1)
	_, res := runPlan(t, machineStarter(queue), loadFile(t, "ok", machinePipeline("machines_containers", stage)))
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s: %s", res.Status, dumpTree(res.Tree))
	}
	if outs := res.Tree.Find("build.check").Outputs["outputVariables"].(map[string]any); outs["PING"] != "ready" || outs["NOTE"] != "from-the-machine" {
		t.Errorf("outputs %v: want the service's answer and the machine step's file", outs)
	}
	if got := containers(); len(got) != 0 {
		t.Errorf("containers %v left after the stage", got)
	}
	waitEmpty(context.Background(), t, root)

	hang := machineStage("hang", withImage("wait", "Run", "sleep 600", ", timeout: 10m"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := machineStarter(queue)
	exec, err := s.Start(ctx, loadFile(t, "hang", machinePipeline("machines_containers_abort", hang)), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil && len(containers()) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.Abort(ctx, exec.ID, "test", "stop"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Result(ctx, exec.ID); err != nil || res.Status != status.Aborted {
		t.Fatalf("pipeline %v %v after the abort", res, err)
	}
	for ctx.Err() == nil && len(containers()) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	if got := containers(); len(got) != 0 {
		t.Errorf("containers %v left after the abort", got)
	}
	waitEmpty(ctx, t, root)
}

// machineWithContainers is a build machine with containerd, and a registry holding a busybox
// image behind credentials, connector reg's (its password secret reg_pw).
type machineWithContainers struct {
	ctrd  *ctrtest.Containerd
	root  string // the workspace root
	image string
	files string // the folder of the pipelines, with reg.yaml
}

// containerMachine starts the pipelines' worker of queue as a build machine with a containerd
// of its own.
func containerMachine(t testing.TB, queue string) *machineWithContainers {
	t.Helper()
	cm := &machineWithContainers{ctrd: ctrtest.Start(t), files: t.TempDir()}
	reg := registrytest.Start(t)
	cm.image = reg.Host + "/tools/busybox:1"
	ctrtest.PushBusybox(t, cm.image, &authn.Basic{Username: registrytest.Username, Password: registrytest.Password})
	t.Setenv("GANTRY_SECRET_REG_PW", registrytest.Password)
	dir := t.TempDir()
	p, err := worker.Start(env.client, worker.Options{TaskQueue: queue, Internal: env.internal, Logs: env.logs, WorkDir: dir, BuildMachine: true,
		MaxStages: 2, StepHelper: stepHelper(t), Containerd: cm.ctrd.Address})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	cm.root = filepath.Join(dir, "build")
	conn := "connector:\n  name: reg\n  identifier: reg\n  type: DockerRegistry\n  spec: {dockerRegistryUrl: " + reg.URL +
		", providerType: Other, auth: {type: UsernamePassword, spec: {username: " + registrytest.Username + ", passwordRef: reg_pw}}}\n"
	if err := os.WriteFile(filepath.Join(cm.files, "reg.yaml"), []byte(conn), 0o600); err != nil {
		t.Fatal(err)
	}
	return cm
}

// load loads a pipeline of the machine's folder for a run on build machines with containerd.
func (cm *machineWithContainers) load(t testing.TB, name, src string) *plan.Plan {
	t.Helper()
	path := filepath.Join(cm.files, name+".yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := load.File(path, load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Machines: true, Containerd: cm.ctrd.Address}})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// imageStep is a step of typ running command in image, pulled through connector reg.
func imageStep(image, id, typ, command, extra string) string {
	return `                  - step: {type: ` + typ + `, name: ` + id + `, identifier: ` + id + `, spec: {connectorRef: reg, image: ` + image +
		`, shell: Sh, command: ` + strconv.Quote(command) + extra + `}}
`
}
