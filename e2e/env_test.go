// Package e2e runs pipelines end to end on a real Temporal server (real history, real matching,
// real timers), real bash and a real local HTTP server. The shared server keeps its state in
// SQLite files, as the embedded server does. Under the race detector (`make test`) it is a
// `gantry temporal` process, built without the detector: inside the race-instrumented test
// binary it ran several times slower, while the worker, the starter and every activity stay in
// the test binary, under the detector. Without it (`make bench`) it is the embedded server in
// the test's process, as `gantry run` runs it.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/devserver"
	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/internal/topotest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// env is one Temporal server with a worker, shared by the tests of this package.
var env struct {
	srv      *sharedServer
	gantry   string // the gantry binary, built once for the tests that run its commands
	client   client.Client
	internal client.Client // the internal namespace, as the gantry command uses
	starter  *starter.Starter
	logs     logs.Store
	tofu     string // the OpenTofu binary the worker's Terraform steps run
	tfMirror string // the filesystem mirror of the test provider (hack/tofu/provider.sh)
	// knownHosts is the worker's known_hosts file (the SSH tests append their hosts).
	knownHosts string
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gantry-e2e-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if env.gantry, err = topotest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := startShared(env.gantry, filepath.Join(dir, "temporal")) // file-backed, as gantry run uses
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.stop()
	c, err := dialServer(srv.Address, srv.Namespace)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	ic, err := client.NewClientFromExisting(c, client.Options{Namespace: workflows.InternalNamespace(srv.Namespace), Logger: quiet{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ic.Close()
	env.srv, env.client, env.internal = srv, c, ic
	env.starter = &starter.Starter{Client: c, Internal: ic}
	env.logs = logs.Store{Dir: filepath.Join(dir, "logs")}
	// OpenTofu for the Terraform steps: built by `make test` first (terraform-tools), cached.
	tofu, err := testproc.Built("tofu")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build OpenTofu:", err)
		return 1
	}
	mirror, err := testproc.Built("tofu", "provider.sh")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build the test provider:", err)
		return 1
	}
	env.tfMirror = mirror
	tfKeys, err := codec.LoadOrCreate(filepath.Join(dir, "terraform-keys.yaml"), "e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.tofu = tofu
	// The SSH tests add their hosts' keys to the worker's known hosts.
	env.knownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(env.knownHosts, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := worker.New(c, worker.Options{Logs: env.logs, Secrets: &secrets.Store{}, Internal: ic, TerraformBin: env.tofu, TerraformKeys: tfKeys,
		TerraformPlugins: env.tfMirror, SSHKnownHosts: env.knownHosts, LockCheck: time.Second})
	w.RegisterWorkflowWithOptions(rawSteps, workflow.RegisterOptions{Name: rawStepsName})
	w.RegisterWorkflowWithOptions(rawFanout, workflow.RegisterOptions{Name: rawFanoutName})
	w.RegisterWorkflowWithOptions(rawApproval, workflow.RegisterOptions{Name: rawApprovalName})
	w.RegisterWorkflowWithOptions(rawStagedApproval, workflow.RegisterOptions{Name: rawStagedApprovalName})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer w.Stop()
	defer stopCluster()
	defer stopNode()
	return m.Run()
}

// startServer starts an embedded server of a test's own (one it restarts), with its client.
func startServer(ctx context.Context, dataDir string) (*devserver.Server, client.Client, error) {
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: dataDir, SearchAttributes: workflows.SearchAttributes(),
		Extra: []string{workflows.InternalNamespace("default")}})
	if err != nil {
		return nil, nil, err
	}
	c, err := dialServer(srv.Address, srv.Namespace)
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return srv, c, nil
}

// dialServer connects as the gantry command does (cli/connect.go): no gRPC compression on the
// local hop.
func dialServer(address, namespace string) (client.Client, error) {
	return client.Dial(client.Options{HostPort: address, Namespace: namespace, Logger: quiet{}, ContextPropagators: worker.ContextPropagators(),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
}

// sharedServer is the Temporal server the package's tests share.
type sharedServer struct {
	Address, Namespace string
	stop               func()
}

// startShared starts the shared server: a process of its own under the race detector, the
// embedded server otherwise (raceDetector).
func startShared(bin, dataDir string) (*sharedServer, error) {
	if raceDetector {
		p, err := startTemporal(bin, dataDir)
		if err != nil {
			return nil, err
		}
		return &sharedServer{Address: p.Address, Namespace: p.Namespace, stop: p.Stop}, nil
	}
	srv, err := devserver.Start(context.Background(), devserver.Options{DataDir: dataDir, SearchAttributes: workflows.SearchAttributes(),
		Extra: []string{workflows.InternalNamespace("default")}})
	if err != nil {
		return nil, err
	}
	return &sharedServer{Address: srv.Address, Namespace: srv.Namespace, stop: func() { _ = srv.Stop() }}, nil
}

// temporalProcess is a Temporal server of its own: `gantry temporal --data-dir`, its log
// beside its data (shown when it fails to start).
type temporalProcess struct {
	Address, Namespace string
	cmd                *exec.Cmd
	exited             chan struct{}
}

// startTemporal starts the server on eight consecutive free ports and waits until it serves.
func startTemporal(bin, dataDir string) (*temporalProcess, error) {
	base, err := freeport.Consecutive(8)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	logPath := dataDir + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p := &temporalProcess{Address: "127.0.0.1:" + strconv.Itoa(base), Namespace: "default", exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "temporal", "--data-dir", dataDir, "--listen", p.Address, "--namespace", p.Namespace)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if out, _ := os.ReadFile(logPath); strings.Contains(string(out), "temporal: serving on") {
			return p, nil
		}
		select {
		case <-p.exited:
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("gantry temporal exited before serving:\n%s", out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("gantry temporal did not serve within 3 minutes:\n%s", out)
		}
	}
}

// Stop stops the server as an operator does (SIGTERM), killing it if it lingers.
func (p *temporalProcess) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// internalOf is the internal namespace's client beside c, closed when the test ends.
func internalOf(t *testing.T, c client.Client) client.Client {
	t.Helper()
	ic, err := client.NewClientFromExisting(c, client.Options{Namespace: workflows.InternalNamespace(env.srv.Namespace), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ic.Close)
	return ic
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

func compile(t testing.TB, name string, src []byte, opts load.Options) *plan.Plan {
	t.Helper()
	opts.ForRun = true
	r := load.Bytes(name, src, opts)
	if !r.OK() || r.Plan == nil {
		t.Fatalf("%s does not load:\n%s", name, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// runPlan starts a plan and waits for its result.
// rerun starts `gantry rerun` of an execution and waits for its result.
func rerun(t *testing.T, id string) *workflows.PipelineResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	again, err := env.starter.Rerun(ctx, id, workflows.Trigger{Type: "MANUAL", User: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, again.ID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func runPlan(t testing.TB, s *starter.Starter, p *plan.Plan) (starter.Execution, *workflows.PipelineResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Result(ctx, exec.ID)
	if err == nil {
		err = s.Complete(ctx, exec.ID, res.Tree)
	}
	if err != nil {
		t.Fatal(err)
	}
	return exec, res
}

// loadRun loads a pipeline file for a run (its entities and templates beside it), with sets;
// a file that does not load fails the test with its diagnostics.
func loadRun(t testing.TB, file string, sets ...string) *plan.Plan {
	t.Helper()
	r, err := load.File(file, load.Options{ForRun: true, Sets: sets})
	if err != nil || !r.OK() {
		t.Fatalf("load %s: %v\n%s", file, err, r.Diags.Render(r.Sources))
	}
	return r.Plan
}
