// Package contract is the contract between the workflows and the step implementations:
// activity names, the step input and result types, and the failure categories. It holds no
// I/O, so workflow code may import it.
package contract

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/plan"
)

// Activity names, registered by the worker and called by name from workflow code.
const (
	ShellScript = "gantry.ShellScript"
	// Ticket opens or updates a Jira issue or ServiceNow ticket (or imports a ServiceNow row);
	// TicketRead reads one for an approval; EmailStep sends an Email step's message.
	Ticket     = "gantry.Ticket"
	TicketRead = "gantry.TicketRead"
	EmailStep  = "gantry.Email"
	Http       = "gantry.Http"
	Policy     = "gantry.Policy"
	Kubernetes = "gantry.Kubernetes"
	// FetchManifests fetches a Git-stored manifest at a Deployment stage's service phase.
	FetchManifests = "gantry.FetchManifests"
	// FetchChart pulls a Helm chart from a chart repository at a Deployment stage's service phase.
	FetchChart = "gantry.FetchChart"
	// ResolveArtifact resolves a Deployment stage's artifact tag to a digest at its service phase.
	ResolveArtifact = "gantry.ResolveArtifact"
	// AwsLambda runs the AwsLambdaDeploy and AwsLambdaRollback steps.
	AwsLambda = "gantry.AwsLambda"
	// Ecs runs the ECS steps.
	Ecs = "gantry.Ecs"
	// Asg runs the steps of the Asg deployment type.
	Asg = "gantry.Asg"
	// FetchS3Manifests reads an S3-stored manifest; ResolveS3Artifact finds an AmazonS3
	// artifact's object. Both at a Deployment stage's service phase.
	FetchS3Manifests  = "gantry.FetchS3Manifests"
	ResolveS3Artifact = "gantry.ResolveS3Artifact"
	// ResolveAmiArtifact finds an AmazonMachineImage artifact's image.
	ResolveAmiArtifact = "gantry.ResolveAmiArtifact"
	// PodStart creates a containerized step group's pod; PodStop deletes it; ContainerStep runs
	// a step in its container.
	PodStart      = "gantry.PodStart"
	PodStop       = "gantry.PodStop"
	ContainerStep = "gantry.ContainerStep"
	// WorkspaceStart makes a CI stage's workspace on the build machine its session runs on;
	// WorkspaceStop ends what its steps left running and removes it; MachineStep runs a
	// container step there, without a container. Only build machines register them.
	WorkspaceStart = "gantry.WorkspaceStart"
	WorkspaceStop  = "gantry.WorkspaceStop"
	MachineStep    = "gantry.MachineStep"
	// Command runs a Command step's units on one host over SSH.
	Command = "gantry.Command"
	// FetchInstances runs a CustomDeployment's FetchInstanceScript step.
	FetchInstances = "gantry.FetchInstances"
	// Terraform runs the TerraformPlan, TerraformApply, TerraformDestroy and TerraformRollback
	// steps.
	Terraform = "gantry.Terraform"
	// Notify sends one notification delivery (notify.Delivery); ExecutionClosed tells a
	// notifier whether the pipeline execution it serves has closed.
	Notify          = "gantry.Notify"
	ExecutionClosed = "gantry.ExecutionClosed"
)

// PodInput is a containerized step group's pod: where it runs (its infrastructure rendered)
// and one container per container step, in order.
type PodInput struct {
	ExecutionID string `json:"executionId"`
	// WorkflowID and RunID are the stage workflow's: a pod whose workflow has closed is
	// garbage, whoever created it.
	WorkflowID string         `json:"workflowId"`
	RunID      string         `json:"runId"`
	Group      string         `json:"group"` // the group's node path
	Name       string         `json:"name"`  // the pod's name, unique per execution and group run
	Pod        plan.Pod       `json:"pod"`
	Containers []PodContainer `json:"containers"`
	// Secrets are the secrets the steps reference: they reach the containers from a
	// Kubernetes Secret created with the pod, never in the pod spec.
	Secrets []string `json:"secrets,omitempty"`
	// Workspace and Machine are a build machine's workspace folder and its worker, once
	// WorkspaceStart made it (Pod.Machine set).
	Workspace string `json:"workspace,omitempty"`
	Machine   string `json:"machine,omitempty"`
}

// Workspace is what WorkspaceStart made: the folder, on the build machine named.
type Workspace struct {
	Dir     string `json:"dir"`
	Machine string `json:"machine"`
}

// PodContainer is one step's container, its fields rendered.
type PodContainer struct {
	Name            string `json:"name"`
	Step            string `json:"step"` // the step's node path
	Type            string `json:"type"`
	Image           string `json:"image"`
	ConnectorRef    string `json:"connectorRef,omitempty"`
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	Privileged      bool   `json:"privileged,omitempty"`
	RunAsUser       *int64 `json:"runAsUser,omitempty"`
	CPU             string `json:"cpu,omitempty"`    // limit
	Memory          string `json:"memory,omitempty"` // limit
}

var secretRef = regexp.MustCompile(`<\+secrets\.getValue\("([^"]+)"\)>`)

// SecretRefs returns the secret identifiers a text references literally, each once, in order.
func SecretRefs(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range secretRef.FindAllStringSubmatch(s, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// Heartbeat records an activity's heartbeats, a third of its heartbeat timeout apart, until
// ctx ends (nothing without a timeout).
func Heartbeat(ctx context.Context, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	t := time.NewTicker(timeout / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			activity.RecordHeartbeat(ctx)
		}
	}
}

// RunContext is the context a step's work runs in: ended by ctx, by the step's timeout (none
// when 0), and heartbeating every third of heartbeat while it lasts. Cancel it when done.
func RunContext(ctx context.Context, timeout, heartbeat time.Duration) (context.Context, context.CancelFunc) {
	runCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, timeout)
		parent := cancel
		cancel = func() { stop(); parent() }
	}
	go Heartbeat(runCtx, heartbeat)
	return runCtx, cancel
}

// PodHelperContainer is the container every group pod has beside its steps' (gantry-helper's
// image): GitClone steps write into the workspace from it.
const PodHelperContainer = "gantry"

// PodStep is where a container step runs: its group's pod (recreated if it is gone) and its
// own container in it.
type PodStep struct {
	Pod       PodInput `json:"pod"`
	Container string   `json:"container"`
}

// ResolveInput is an artifact to resolve, its image path, tag and tag pattern rendered.
type ResolveInput struct {
	ExecutionID string        `json:"executionId"`
	Artifact    plan.Artifact `json:"artifact"`
}

// Resolved is the image an artifact resolved to.
type Resolved struct {
	Tag    string `json:"tag"`
	Digest string `json:"digest"`
	// Image is the reference to deploy: registry/path:tag@digest.
	Image string `json:"image"`
}

// FetchInput is a manifest's Git store, its branch and commit rendered.
type FetchInput struct {
	ExecutionID string        `json:"executionId"`
	Manifest    string        `json:"manifest"`
	Store       plan.GitStore `json:"store"`
}

// S3FetchInput is a manifest's S3 store, its bucket, region and paths rendered.
type S3FetchInput struct {
	ExecutionID string       `json:"executionId"`
	Manifest    string       `json:"manifest"`
	Store       plan.S3Store `json:"store"`
}

// S3ResolveInput is an AmazonS3 artifact source, its fields rendered.
type S3ResolveInput struct {
	ExecutionID string          `json:"executionId"`
	ID          string          `json:"id"`
	Artifact    plan.S3Artifact `json:"artifact"`
}

// S3Resolved is the object an AmazonS3 artifact resolved to.
type S3Resolved struct {
	Bucket   string `json:"bucketName"`
	FilePath string `json:"filePath"`
	Region   string `json:"region"`
	ETag     string `json:"eTag"`
	Size     int64  `json:"size"`
	Modified string `json:"lastModified"`
	URL      string `json:"url"`
}

// AmiResolveInput is an AmazonMachineImage artifact source, its fields rendered.
type AmiResolveInput struct {
	ExecutionID string           `json:"executionId"`
	ID          string           `json:"id"`
	Artifact    plan.AmiArtifact `json:"artifact"`
}

// AmiResolved is the image an AmazonMachineImage artifact resolved to: its ID, its name (the
// version), and its tags with its owner and type (the metadata).
type AmiResolved struct {
	AmiID    string            `json:"amiId"`
	Version  string            `json:"version"`
	Metadata map[string]string `json:"metadata"`
}

// ChartInput is a HelmChart manifest's chart repository, its version rendered.
type ChartInput struct {
	ExecutionID string         `json:"executionId"`
	Manifest    string         `json:"manifest"`
	Chart       plan.ChartRepo `json:"chart"`
}

// Fetched is what a Git store held at the commit fetched, or the chart pulled from a chart
// repository (its files below the chart's name).
type Fetched struct {
	Commit string      `json:"commit"`
	Files  []plan.File `json:"files,omitempty"`
	Values []plan.File `json:"values,omitempty"`
	// Cached says the files came from the worker's cache, not the repository.
	Cached bool `json:"cached,omitempty"`
	// Chart is the pulled chart's Chart.yaml; Digest its OCI manifest's digest.
	Chart  *ChartMeta `json:"chartMeta,omitempty"`
	Digest string     `json:"digest,omitempty"`
}

// Snapshot limits: a repository's YAML and Rego files are what a remote pipeline's start may read from
// it (activities/gitstore's Snapshot), and no more than this is read of one commit or checkout.
const (
	MaxSnapshotFiles = 20000
	MaxSnapshotFile  = 1 << 20 // larger files are left out
	MaxSnapshotBytes = 64 << 20
)

// ChartMeta is what a chart's Chart.yaml says of it, as `<+manifests.ID.helm.*>` publishes it.
type ChartMeta struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Description string `json:"description,omitempty"`
	KubeVersion string `json:"kubeVersion,omitempty"`
}

// StepInput is what a step activity receives. Spec is the rendered spec; secrets appear in it
// only as references (`<+secrets.getValue("id")>`), resolved inside the activity.
type StepInput struct {
	ExecutionID string          `json:"executionId"`
	StepPath    string          `json:"stepPath"` // dot-joined identifiers below the pipeline
	Type        string          `json:"type"`
	Spec        json.RawMessage `json:"spec"`
	Timeout     time.Duration   `json:"timeout"`
	// Deploy is the deployment a Kubernetes step works on; nil for other steps.
	Deploy *DeployInput `json:"deploy,omitempty"`
	// Pod is a container step's pod and container; nil for other steps.
	Pod *PodStep `json:"pod,omitempty"`
	// Env are built-in environment variables of a container step (a CI stage's `CI`,
	// `HARNESS_*` and `DRONE_*`, spec 22.2); the step's own variables override them.
	Env map[string]string `json:"env,omitempty"`
	// Refs are the step's references resolved before the run (plan.Node.Refs).
	Refs *plan.StepRefs `json:"refs,omitempty"`
}

// DeployInput is a Deployment stage's target and manifests as a Kubernetes step sees them:
// expressions already rendered, except ReleaseRevisionMarker, which the step replaces with
// the release number it deploys.
type DeployInput struct {
	Namespace   string          `json:"namespace"`
	ReleaseName string          `json:"releaseName"`
	Connector   plan.Connector  `json:"connector"`
	Manifests   []plan.Manifest `json:"manifests"`
	// Rollback is set for a step in a rollback section; RollbackOf, in a post-deployment
	// rollback, is the earlier execution whose deployment it undoes.
	Rollback   bool   `json:"rollback,omitempty"`
	RollbackOf string `json:"rollbackOf,omitempty"`
	// StepSource says Manifests is a K8sApply step's own manifestSource, not the service's.
	StepSource bool `json:"stepSource,omitempty"`
	// Aws and Region are an AwsLambda infrastructure's; Artifact is the code deployed.
	Aws     *plan.AwsConnector `json:"aws,omitempty"`
	Region  string             `json:"region,omitempty"`
	Cluster string             `json:"cluster,omitempty"` // ECS
	// AsgName is an Asg infrastructure's baseAsgName: the group its steps deploy by default.
	AsgName string `json:"asgName,omitempty"`
	// Ssh is a Pdc infrastructure's hosts and login; Host the one a Command step runs on (the
	// loop's item), ConfigFiles the service's, rendered.
	Ssh         *plan.SshInfra `json:"ssh,omitempty"`
	Host        string         `json:"host,omitempty"`
	ConfigFiles []plan.File    `json:"configFiles,omitempty"`
	// Custom is a CustomDeployment infrastructure's fetch-instances script, rendered.
	Custom   *plan.CustomInfra `json:"custom,omitempty"`
	Artifact *DeployArtifact   `json:"artifact,omitempty"`
}

// DeployArtifact is the primary artifact as a deployment step uses it: an object in S3 or an
// image. An Ssh stage's Command steps fetch it themselves: with Aws and Region (S3), or
// Registry (an image, Image being registry/path:tag@digest).
type DeployArtifact struct {
	Type     string                  `json:"type"`
	Bucket   string                  `json:"bucket,omitempty"`
	Key      string                  `json:"key,omitempty"`
	Image    string                  `json:"image,omitempty"`
	Tag      string                  `json:"tag,omitempty"`
	URL      string                  `json:"url,omitempty"` // a CustomArtifact's metadata.url
	Aws      *plan.AwsConnector      `json:"aws,omitempty"`
	Region   string                  `json:"region,omitempty"`
	Registry *plan.RegistryConnector `json:"registry,omitempty"`
}

// ResolveCustomArtifact runs a CustomArtifact source's fetchAllArtifacts script and picks the
// version the stage deploys.
const ResolveCustomArtifact = "gantry.ResolveCustomArtifact"

// CustomArtifactInput is the source's script, its inputs and what it picks, rendered.
type CustomArtifactInput struct {
	ExecutionID string                    `json:"executionId"`
	Artifact    string                    `json:"artifact"`
	Script      plan.CustomArtifactScript `json:"script"`
}

// CustomArtifactResolved is the version picked and its attributes.
type CustomArtifactResolved struct {
	Version  string         `json:"version"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Listed   int            `json:"listed"`
}

// DescribeHosts lists the hosts of an SshWinRmAws infrastructure: its running EC2 instances.
const DescribeHosts = "gantry.DescribeHosts"

// DescribeHostsInput selects the instances, rendered.
type DescribeHostsInput struct {
	ExecutionID string        `json:"executionId"`
	Hosts       plan.AwsHosts `json:"hosts"`
}

// Host is an EC2 instance found: Address is the one the infrastructure reaches it at.
type Host struct {
	InstanceID string            `json:"instanceId"`
	Address    string            `json:"address"`
	PrivateIP  string            `json:"privateIp,omitempty"`
	PublicIP   string            `json:"publicIp,omitempty"`
	PrivateDNS string            `json:"privateDns,omitempty"`
	PublicDNS  string            `json:"publicDns,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// String names the artifact in notes, logs and errors: an object's s3:// address, a URL
// without its user information and query (either may hold credentials), or the image.
func (a *DeployArtifact) String() string {
	if a == nil {
		return "none"
	}
	if a.Bucket != "" {
		return "s3://" + a.Bucket + "/" + a.Key
	}
	if u, err := url.Parse(cmp.Or(a.URL, a.Image)); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	return a.Image
}

// LastDeployed finds what the last successful Ssh stage of another execution deployed with a
// DeployedKey's service to its infrastructure (nil when none); RecordDeployed records a
// RecordDeployedInput when an Ssh stage succeeded. A rollback restores that artifact
// (`<+rollbackArtifact.*>`).
const (
	LastDeployed   = "gantry.LastDeployed"
	RecordDeployed = "gantry.RecordDeployed"
)

// DeployedKey names a service's deployments to one infrastructure of an environment of a
// project (org/project); Execution, in a LastDeployed query, is the execution asking, whose
// own deployments do not count.
type DeployedKey struct {
	Project     string `json:"project"`
	Environment string `json:"environment"`
	Infra       string `json:"infra"`
	Service     string `json:"service"`
	Execution   string `json:"execution,omitempty"`
}

// Deployed is what a successful stage deployed: its artifact as Command steps fetch it, and
// as `<+artifact.*>` published it.
type Deployed struct {
	Execution string          `json:"execution"`
	Artifact  *DeployArtifact `json:"artifact"`
	Published map[string]any  `json:"published"`
}

// RecordDeployedInput is LastDeployed's record.
type RecordDeployedInput struct {
	Key      DeployedKey `json:"key"`
	Deployed Deployed    `json:"deployed"`
}

// ReleaseRevisionMarker stands for `<+kubernetes.release.revision>` in rendered manifests.
const ReleaseRevisionMarker = "__GANTRY_RELEASE_REVISION__"

// StepResult is what a step activity returns on success.
type StepResult struct {
	Outputs map[string]any `json:"outputs,omitempty"`
	// Tests summarises the test reports a step named (JUnit), nil without any.
	Tests *TestSummary `json:"tests,omitempty"`
	// Worker, Started and Ended say who ran the step and when, by the worker's clock: workflow
	// time stands still while a workflow task runs several fast-path steps.
	Worker  string    `json:"worker,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}

// FailureDetails travel with a step's failure: the process that ran it, and the outputs a
// failed step still reports (a denied Policy step's decision).
type FailureDetails struct {
	Worker  string         `json:"worker"`
	Outputs map[string]any `json:"outputs,omitempty"`
	Tests   *TestSummary   `json:"tests,omitempty"`
}

// TestSummary is what a step's test reports say: how many tests ran, failed (errors
// included) and were skipped, and the first failing tests' names.
type TestSummary struct {
	Total   int      `json:"total"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped,omitempty"`
	Reports int      `json:"reports"`           // report files read
	Failing []string `json:"failing,omitempty"` // "class.name", the first MaxFailing
}

// MaxFailing bounds the failing test names a summary keeps.
const MaxFailing = 20

// FailWithTests is Fail for a step whose test reports were read.
func FailWithTests(c Category, tests *TestSummary, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), string(c), nil, FailureDetails{Tests: tests})
}

// Details returns a step failure's details (zero if it has none).
func Details(err error) FailureDetails {
	var app *temporal.ApplicationError
	var d FailureDetails
	if errors.As(err, &app) && app.HasDetails() {
		_ = app.Details(&d)
	}
	return d
}

// FailedOn returns the worker named by a step failure's details, or "".
func FailedOn(err error) string { return Details(err).Worker }

// FailWithOutputs is Fail for a step that still reports outputs.
func FailWithOutputs(c Category, outputs map[string]any, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), string(c), nil, FailureDetails{Outputs: outputs})
}

// Category is a failure-strategy error category (spec 5.2).
type Category string

// The categories a step can fail with.
const (
	Unknown              Category = "Unknown"
	Authentication       Category = "Authentication"
	Connectivity         Category = "Connectivity"
	Timeout              Category = "Timeout"
	Authorization        Category = "Authorization"
	Verification         Category = "Verification"
	DelegateProvisioning Category = "DelegateProvisioning"
	PolicyEvaluation     Category = "PolicyEvaluationFailure"
	InputTimeout         Category = "InputTimeoutError"
	ApprovalRejection    Category = "ApprovalRejection"
	DelegateRestart      Category = "DelegateRestart"
	UserMarkedFailure    Category = "UserMarkedFailure"
)

// Fail returns a step failure of a category. It is never retried by Temporal: step failures
// follow the pipeline's failure strategies, Temporal's retries are for lost workers.
func Fail(c Category, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), string(c), nil)
}

// Failure is a step failure as the workflow sees it.
type Failure struct {
	Category Category `json:"category"`
	Message  string   `json:"message"`
}

// Classify turns an activity error into a Failure (callers check for cancellation first: an
// abort is not a failure).
func Classify(err error) *Failure {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		c := Category(app.Type())
		if !known(c) {
			c = Unknown
		}
		return &Failure{Category: c, Message: app.Message()}
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		switch te.TimeoutType().String() {
		case "Heartbeat":
			return &Failure{Category: DelegateRestart, Message: "the worker running the step stopped heartbeating"}
		case "ScheduleToStart":
			return &Failure{Category: DelegateProvisioning, Message: "no worker picked up the step"}
		}
		return &Failure{Category: Timeout, Message: "step timed out"}
	}
	var pe *temporal.PanicError
	if errors.As(err, &pe) {
		return &Failure{Category: Unknown, Message: "step panicked: " + pe.Error()}
	}
	return &Failure{Category: Unknown, Message: err.Error()}
}

func known(c Category) bool {
	switch c {
	case Unknown, Authentication, Connectivity, Timeout, Authorization, Verification,
		DelegateProvisioning, PolicyEvaluation, InputTimeout, ApprovalRejection, DelegateRestart, UserMarkedFailure:
		return true
	}
	return false
}
