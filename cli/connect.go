package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/devserver"
	"github.com/gantry-cd/gantry/metrics"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// connFlags select the Temporal server: an external cluster (--address) or the embedded one
// with its state in --data-dir.
type connFlags struct {
	address         string
	namespace       string
	dataDir         string
	taskQueue       string
	secretsFile     string
	policyDir       string
	codecKeys       string
	fastPath        bool
	secure          secureFlags
	maxSteps        int
	workflowPollers int
	metricsAddr     string
	stopGrace       time.Duration
	instanceSync    time.Duration
	tags            []string
	helperImage     string
	buildkitImage   string
	terraformBin    string
	tfPlugins       string
	knownHosts      string
	logBucket       logBucketFlags
	secretMgr       secretManagerFlags
	notify          notifyFlags
	buildMachine    bool // this process's worker runs CI stages on its machine (--build-machine)
	maxStages       int
	containerd      string // the build machine's containerd socket (--containerd)
}

func (f *connFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "address", os.Getenv("GANTRY_TEMPORAL_ADDRESS"), "Temporal frontend host:port; empty starts an embedded server (env GANTRY_TEMPORAL_ADDRESS)")
	cmd.Flags().StringVar(&f.namespace, "namespace", envOr("GANTRY_NAMESPACE", "default"), "Temporal namespace (env GANTRY_NAMESPACE)")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", defaultDataDir(), "state of the embedded server, step logs and workspaces (env GANTRY_HOME)")
	cmd.Flags().StringVar(&f.taskQueue, "task-queue", workflows.TaskQueue, "task queue of pipeline workflows and steps")
	cmd.Flags().StringVar(&f.secretsFile, "secrets-file", "", "YAML file of secret id: value pairs for steps (default DATA_DIR/secrets.yaml); GANTRY_SECRET_<ID> variables take precedence")
	cmd.Flags().StringVar(&f.policyDir, "policies", os.Getenv("GANTRY_POLICIES"), "Rego policy directory with sets.yaml: on-run checks and Policy steps (env GANTRY_POLICIES; e.g. policies/library)")
	f.secure.add(cmd)
	cmd.Flags().StringSliceVar(&f.tags, "tags", splitList(os.Getenv("GANTRY_WORKER_TAGS")), "delegate tags of this process's worker: it also runs steps whose delegateSelectors are among them (env GANTRY_WORKER_TAGS, comma-separated)")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-listen", os.Getenv("GANTRY_METRICS_LISTEN"), "serve Prometheus /metrics, /healthz and /readyz on this address, e.g. 127.0.0.1:9090 (env GANTRY_METRICS_LISTEN)")
	cmd.Flags().DurationVar(&f.instanceSync, "instance-sync", contract.DefaultInstanceSync, "how often this worker's deployments' targets are read for their running instances and drift (0: never)")
	cmd.Flags().DurationVar(&f.stopGrace, "shutdown-grace", 0, "on SIGTERM, how long running steps of this process's worker may finish before they are cancelled (and retried by another worker)")
	cmd.Flags().StringVar(&f.helperImage, "helper-image", envOr("GANTRY_HELPER_IMAGE", worker.DefaultHelperImage), "gantry-helper's image, pulled into the pods of containerized step groups (env GANTRY_HELPER_IMAGE)")
	cmd.Flags().StringVar(&f.buildkitImage, "buildkit-image", envOr("GANTRY_BUILDKIT_IMAGE", worker.DefaultBuildKitImage), "the image BuildAndPush steps build in, made by `go run ./hack/helper-image --buildkit REF` (env GANTRY_BUILDKIT_IMAGE)")
	cmd.Flags().StringVar(&f.terraformBin, "terraform-bin", os.Getenv("GANTRY_TERRAFORM_BIN"), "the tofu or terraform binary Terraform steps run; empty finds tofu, then terraform, on PATH (env GANTRY_TERRAFORM_BIN; hack/tofu/build.sh builds OpenTofu)")
	cmd.Flags().StringVar(&f.tfPlugins, "terraform-plugins", os.Getenv("GANTRY_TERRAFORM_PLUGINS"), "a filesystem mirror of Terraform providers (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH folders), the only place Terraform steps install providers from; empty: their registries (env GANTRY_TERRAFORM_PLUGINS)")
	cmd.Flags().StringVar(&f.knownHosts, "ssh-known-hosts", os.Getenv("GANTRY_SSH_KNOWN_HOSTS"), "known_hosts file the hosts of SSH deployments must match; empty accepts any host key and says so in the step's log (env GANTRY_SSH_KNOWN_HOSTS)")
	cmd.Flags().IntVar(&f.maxSteps, "max-concurrent-steps", envInt("GANTRY_MAX_CONCURRENT_STEPS"), "steps this process's worker runs at once; 0 is the SDK default (env GANTRY_MAX_CONCURRENT_STEPS)")
	cmd.Flags().IntVar(&f.workflowPollers, "workflow-pollers", envInt("GANTRY_WORKFLOW_POLLERS"), fmt.Sprintf("most pollers this process's worker fetches workflow tasks with; they scale with the tasks waiting, from 1; 0 is %d (env GANTRY_WORKFLOW_POLLERS)", worker.DefaultWorkflowPollers))
	cmd.Flags().BoolVar(&f.fastPath, "fast-path", os.Getenv("GANTRY_FAST_PATH") != "false", "run short ShellScript and Http steps as local activities on the stage's worker; false runs every step as a regular activity, for executions this process starts (env GANTRY_FAST_PATH=false)")
	cmd.Flags().StringVar(&f.codecKeys, "codec-keys", os.Getenv("GANTRY_CODEC_KEYS"), "key file (mode 600) that turns on AES-256-GCM encryption of every Temporal payload; every worker and client of the namespace needs it (env GANTRY_CODEC_KEYS)")
	cmd.Flags().IntVar(&f.maxStages, "max-stages", envInt("GANTRY_MAX_STAGES"), fmt.Sprintf("as a build machine, the CI stages this process's worker runs at once; more wait; 0 is %d (env GANTRY_MAX_STAGES)", worker.DefaultMaxStages))
	f.logBucket.add(cmd)
	f.secretMgr.add(cmd)
	f.notify.add(cmd)
}

// secretStore is the process's secret resolver: GANTRY_SECRET_<ID>, the secrets file
// (default DATA_DIR/secrets.yaml), then AWS Secrets Manager with --aws-secrets-region.
func (f connFlags) secretStore(ctx context.Context) (*secrets.Store, error) {
	file := f.secretsFile
	if file == "" {
		file = filepath.Join(f.dataDir, "secrets.yaml")
	}
	return f.secretMgr.resolver(ctx, file)
}

// dataConverter is Temporal's default, or the encrypting codec when --codec-keys is set.
func (f *connFlags) dataConverter() (converter.DataConverter, error) {
	if f.codecKeys == "" {
		return nil, nil
	}
	keys, err := codec.LoadFile(f.codecKeys)
	if err != nil {
		return nil, err
	}
	return (&codec.Codec{Keys: keys}).DataConverter(), nil
}

// terraformKeys seal the plans and configurations Terraform provisioners keep: the codec keys
// when set (every worker opens what any other sealed), otherwise a key of the data directory,
// made the first time, which only workers sharing that directory hold.
func (f *connFlags) terraformKeys() (*codec.Keys, error) {
	if f.codecKeys != "" {
		return codec.LoadFile(f.codecKeys)
	}
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return codec.LoadOrCreate(filepath.Join(f.dataDir, "terraform-keys.yaml"), "local-"+host)
}

// localWorker says whether a command that starts and follows an execution runs a worker too:
// on an embedded server of its own yes (nothing else may run it); against a cluster, or joined
// to the server another process serves on the data directory, no: that process's workers run
// the steps, and a client that exits must not take steps of other executions with it.
func (f connFlags) localWorker() bool {
	if f.address != "" {
		return false
	}
	_, joined := runningServer(f.dataDir)
	return !joined
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func envInt(k string) int {
	n, _ := strconv.Atoi(os.Getenv(k))
	return n
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func defaultDataDir() string {
	if v := os.Getenv("GANTRY_HOME"); v != "" {
		return v
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".gantry")
	}
	return ".gantry"
}

// engine is a connection to Temporal, with the embedded server and a local worker when this
// process runs them.
type engine struct {
	client   client.Client
	internal client.Client // the internal namespace: sequence workflows, cron schedules
	starter  *starter.Starter
	server   *devserver.Server
	workers  *worker.Process // the worker and its delegate workers, when this process runs them
	logs     logs.Store
	secrets  *secrets.Store
	lock     *os.File
	log      *zap.Logger
	policies *policies.Engine // nil without --policies
	metrics  *metrics.Metrics // nil without --metrics-listen
	httpSrv  *http.Server
	remote   bool                   // connected to a cluster (--address): steps run on other processes
	address  string                 // the Temporal frontend this process talks to
	uiURL    string                 // the Web UI serving it, when one is known
	uiLink   atomic.Pointer[string] // uiURL, for the worker's notifications (set while they run)
}

// serverInfo is written to DATA_DIR/server.json while a process serves the embedded server, so
// other gantry commands on the same data directory connect to it instead of starting another.
type serverInfo struct {
	Address string `json:"address"`
	PID     int    `json:"pid"`
	UI      string `json:"ui,omitempty"` // the Web UI the serving process serves
}

// connect dials Temporal. With no address it joins the embedded server another gantry process
// serves on the data directory, or starts one. withWorker also runs a worker in this process
// (always when this process starts the embedded server: executions need one to progress).
func connect(ctx context.Context, f connFlags, withWorker bool, log *zap.Logger) (*engine, error) {
	if abs, err := filepath.Abs(f.dataDir); err == nil {
		f.dataDir = abs
	}
	e := &engine{log: log, remote: f.address != ""}
	if err := e.open(ctx, f, withWorker, log); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// open fills the engine: secrets, the embedded server when one is needed, logs, the client,
// the internal namespace's client, metrics, policies and the worker.
func (e *engine) open(ctx context.Context, f connFlags, withWorker bool, log *zap.Logger) error {
	var err error
	if e.secrets, err = f.secretStore(ctx); err != nil {
		return err
	}
	addr := f.address
	if addr == "" {
		if info, ok := runningServer(f.dataDir); ok {
			addr, e.uiURL = info.Address, info.UI
			e.uiLink.Store(&info.UI)
		} else {
			if err := e.startEmbedded(ctx, f); err != nil {
				return err
			}
			addr = e.server.Address
			withWorker = true
		}
	}
	if e.logs, err = f.logBucket.store(ctx, filepath.Join(f.dataDir, "logs"), e.secrets, withWorker, log); err != nil {
		return err
	}
	dc, err := f.dataConverter()
	if err != nil {
		return err
	}
	if f.metricsAddr != "" {
		e.metrics = metrics.New()
	}
	opts := client.Options{
		HostPort:          addr,
		Namespace:         f.namespace,
		DataConverter:     dc,
		Logger:            worker.Logger(log),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}},
		// Secret routes travel from workflows to activities in headers.
		ContextPropagators: worker.ContextPropagators(),
	}
	if e.metrics != nil {
		opts.MetricsHandler = e.metrics.Handler
	}
	if f.address != "" {
		if err := f.secure.apply(&opts); err != nil {
			return err
		}
	}
	c, err := client.Dial(opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w (check --address, or omit it to use the embedded server)", addr, err)
	}
	e.client, e.address = c, addr
	if err := e.connectInternal(ctx, f, opts, withWorker); err != nil {
		return err
	}
	e.starter = &starter.Starter{Client: c, Internal: e.internal, TaskQueue: f.taskQueue, NoFastPath: !f.fastPath, Log: log, Converter: dc}
	if e.metrics != nil {
		if err := e.serveMetrics(f.metricsAddr, log); err != nil {
			return err
		}
	}
	if f.policyDir != "" {
		if e.policies, err = policies.Load(ctx, f.policyDir); err != nil {
			return err
		}
	}
	if withWorker {
		return e.startWorker(f, log)
	}
	return nil
}

// startWorker runs this process's worker with the engine's secrets, logs and policies.
func (e *engine) startWorker(f connFlags, log *zap.Logger) error {
	tfKeys, err := f.terraformKeys()
	if err != nil {
		return err
	}
	wo := worker.Options{
		TerraformBin:       f.terraformBin,
		TerraformPlugins:   f.tfPlugins,
		SSHKnownHosts:      f.knownHosts,
		TerraformKeys:      tfKeys,
		TaskQueue:          f.taskQueue,
		Secrets:            e.secrets,
		Logs:               e.logs,
		WorkDir:            filepath.Join(f.dataDir, "work"),
		Policies:           e.policies,
		MaxConcurrentSteps: f.maxSteps,
		WorkflowPollers:    f.workflowPollers,
		StopTimeout:        f.stopGrace,
		InstanceSync:       cmp.Or(f.instanceSync, -1),
		HelperImage:        f.helperImage,
		BuildKitImage:      f.buildkitImage,
		Log:                log,
		Tags:               f.tags,
		BuildMachine:       f.buildMachine,
		MaxStages:          f.maxStages,
		Containerd:         f.containerd,
		NoFastPath:         !f.fastPath,
		Internal:           e.internal,
		Notify: f.notify.sender(f.dataDir, e.secrets, func() string {
			if u := e.uiLink.Load(); u != nil {
				return *u
			}
			return ""
		}),
	}
	e.workers, err = worker.Start(e.client, wo)
	return err
}

func (e *engine) startEmbedded(ctx context.Context, f connFlags) error {
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(f.dataDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("data directory %s is in use by another gantry process; wait for it, use another --data-dir, or run `gantry server` and let commands share it", f.dataDir)
	}
	e.lock = lock
	s, err := devserver.Start(ctx, devserver.Options{DataDir: f.dataDir, Namespace: f.namespace,
		Extra: []string{workflows.InternalNamespace(f.namespace)}, SearchAttributes: workflows.SearchAttributes()})
	if err != nil {
		return err
	}
	e.server = s
	b, _ := json.Marshal(serverInfo{Address: s.Address, PID: os.Getpid()})
	return os.WriteFile(filepath.Join(f.dataDir, "server.json"), b, 0o600)
}

// announceUI records in DATA_DIR/server.json the UI this process serves, so commands that join
// its embedded server can link their executions to it.
func (e *engine) announceUI(dataDir, url string) {
	e.uiURL = url
	e.uiLink.Store(&url)
	if e.server == nil {
		return
	}
	b, _ := json.Marshal(serverInfo{Address: e.server.Address, PID: os.Getpid(), UI: url})
	_ = os.WriteFile(filepath.Join(dataDir, "server.json"), b, 0o600)
}

// runningServer returns the embedded server another live process serves on dataDir.
func runningServer(dataDir string) (serverInfo, bool) {
	var info serverInfo
	b, err := os.ReadFile(filepath.Join(dataDir, "server.json"))
	if err != nil || json.Unmarshal(b, &info) != nil || info.PID == os.Getpid() {
		return info, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return info, false
	}
	return info, info.Address != ""
}

// serveMetrics serves the metrics, health and readiness endpoints; ready means Temporal
// answers its health check.
func (e *engine) serveMetrics(addr string, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	e.httpSrv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: e.metrics.Mux(func(ctx context.Context) error {
		_, err := e.client.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	})}
	go func() { _ = e.httpSrv.Serve(ln) }()
	log.Info("metrics and health endpoints", zap.String("address", "http://"+ln.Addr().String()))
	return nil
}

func (e *engine) close() {
	if e.starter != nil {
		// Sequence numbers taken ahead go back while the sequence workflows' worker still runs.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.starter.Close(ctx)
		cancel()
	}
	// The worker next: running steps get the shutdown grace to finish.
	if e.workers != nil {
		e.workers.Stop()
	}
	if e.logs.Remote != nil {
		// Ship the logs of the steps this process ran before it exits.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		e.logs.Remote.Stop(ctx)
		cancel()
	}
	if e.httpSrv != nil {
		_ = e.httpSrv.Close()
	}
	if e.metrics != nil {
		_ = e.metrics.Close()
	}
	if e.internal != nil {
		e.internal.Close()
	}
	if e.client != nil {
		e.client.Close()
	}
	if e.server != nil {
		_ = e.server.Stop()
		if e.lock != nil {
			_ = os.Remove(filepath.Join(filepath.Dir(e.lock.Name()), "server.json"))
		}
	}
	if e.lock != nil {
		_ = e.lock.Close()
	}
}

// newLogger returns the CLI's structured logger on stderr: errors only, or info with verbose.
func newLogger(verbose bool) *zap.Logger {
	if verbose {
		return consoleLogger(zap.InfoLevel)
	}
	return consoleLogger(zap.ErrorLevel)
}

// consoleLogger is a zap logger on stderr in console format at level.
func consoleLogger(level zapcore.Level) *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Encoding = "console"
	cfg.EncoderConfig.TimeKey = "time"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.DisableStacktrace = true
	l, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return l
}

// connectInternal opens the client of the internal namespace. A worker on a cluster registers
// that namespace when it is missing; the embedded server creates it at start.
func (e *engine) connectInternal(ctx context.Context, f connFlags, opts client.Options, withWorker bool) error {
	name := workflows.InternalNamespace(f.namespace)
	if f.address != "" && withWorker {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := devserver.RegisterNamespace(rctx, e.client, name, 30*24*time.Hour); err != nil {
			return fmt.Errorf("%w (gantry keeps sequence numbers and cron schedules in namespace %s: create it with `temporal operator namespace create %s`, or let this worker register namespaces)", err, name, name)
		}
	}
	opts.Namespace = name
	ic, err := client.NewClientFromExisting(e.client, opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal namespace %s: %w", name, err)
	}
	e.internal = ic
	return nil
}

// registerAttributes registers Gantry's search attributes on an external cluster.
func registerAttributes(ctx context.Context, e *engine, namespace string) error {
	return devserver.RegisterSearchAttributes(ctx, e.client.OperatorService(), namespace, workflows.SearchAttributes())
}

// longRunning gives the commands that are workers a shutdown grace by default.
func longRunning(cmd *cobra.Command) {
	if fl := cmd.Flags().Lookup("shutdown-grace"); fl != nil {
		fl.DefValue = "30s"
		_ = fl.Value.Set("30s")
	}
}
