package contract

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/plan"
)

// Service instances: for each target a Deployment stage deployed to, one long-lived workflow
// of the internal namespace keeps the last reading of what runs there: how many instances,
// which artifact each runs, whether they drifted from what Gantry deployed. It reads the
// target itself when a deployment ends there. Between deployments one sweep workflow reads
// every target on a timer (every ten minutes by default) and signals a target's workflow only
// when its reading changed, so a target that stays as it is costs Temporal nothing but the
// sweep's listing. A target's workflow ends, taking it off the instances listing, when the
// target is gone.

const (
	// InstancesName is the sync workflow's type; InstancesID(key) its ID.
	InstancesName = "gantry.Instances"
	// SignalInstancesTarget carries an InstanceTarget: a deployment ended there, read it now
	// and from then on. SignalInstancesSync (no payload) reads it now.
	SignalInstancesTarget = "target"
	SignalInstancesSync   = "sync"
	// SignalInstancesReading carries an InstanceReading the sweep made that differs from the
	// target's last.
	SignalInstancesReading = "reading"
	// QueryInstances answers with the InstanceSnapshot, every instance listed.
	QueryInstances = "instances"
	// MemoInstances is the memo key holding the snapshot without its instance list;
	// MemoInstancesTarget holds the InstanceTarget, for the sweep.
	MemoInstances       = "gantryInstances"
	MemoInstancesTarget = "gantryInstancesTarget"
	// ReadInstances is the activity that reads a target's instances (InstanceTarget in,
	// InstanceRead out).
	ReadInstances = "gantry.ReadInstances"
)

// The sweep: one workflow per queue (SweepID) that runs the SweepInstances activity over the
// syncs of its queue (whose worker holds their credentials), then waits its
// interval (InstanceSweepState.Every; SignalSweepEvery changes it); MemoSweep holds its last
// state (InstanceSweepState: its interval and last completed sweep).
const (
	SweepName        = "gantry.InstanceSweep"
	SweepInstances   = "gantry.SweepInstances"
	SignalSweepEvery = "every"
	MemoSweep        = "gantrySweep"
)

// DefaultInstanceSync is how often the sweep reads every target unless the worker says
// otherwise: the reference's ten minutes.
const DefaultInstanceSync = 10 * time.Minute

// SweepID is the ID of the sweep of the syncs on a queue.
func SweepID(queue string) string { return "gantry-instance-sweep/" + queue }

// InstanceSweepState is the sweep workflow's state, carried across its runs, and its memo.
type InstanceSweepState struct {
	Every time.Duration `json:"every"`
	Last  *SweepResult  `json:"last,omitempty"`
}

// SweepResult is one completed sweep: every target running when it Started was read before
// it Ended; Changed of them were signalled a new reading (Gone of those were gone).
type SweepResult struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Targets int       `json:"targets"`
	Changed int       `json:"changed"`
	Failed  int       `json:"failed"`
	Gone    int       `json:"gone"`
}

// InstanceReading is a reading the sweep made: what it read, or why the read failed, and when.
type InstanceReading struct {
	Read  InstanceRead `json:"read"`
	Error string       `json:"error,omitempty"`
	At    time.Time    `json:"at"`
}

// Differs says whether a reading changes what a target's snapshot says (its instance list
// aside beyond the counts): the sweep signals only those.
func (r InstanceReading) Differs(s *InstanceSnapshot) bool {
	if s == nil || r.Read.Gone != "" || r.Error != s.Error {
		return true
	}
	if r.Error != "" {
		return false // still failing, for the same reason
	}
	return r.Read.Count != s.Count || r.Read.Ready != s.Ready || !slices.Equal(r.Read.Artifacts, s.Artifacts) || !slices.Equal(r.Read.Drift, s.Drift)
}

// InstancesID is the workflow ID of a target's instance sync.
func InstancesID(k DeploymentKey) string {
	return "gantry-instances/" + k.Project + "/" + k.Environment + "/" + k.Infra + "/" + k.Service
}

// InstanceTarget is where a target's instances are read: what the Deployment stage deployed
// to, with the connector it used (secret references only, never their values).
type InstanceTarget struct {
	Key            DeploymentKey `json:"key"`
	DeploymentType string        `json:"deploymentType"`
	// Execution and Version are the deployment the reading follows.
	Execution string `json:"execution,omitempty"`
	Version   string `json:"version,omitempty"`
	// A Kubernetes or NativeHelm target's cluster, namespace and release.
	Connector *plan.Connector `json:"connector,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Release   string          `json:"release,omitempty"`
	// An Ssh or WinRm target's hosts, as deployed.
	Hosts []string `json:"hosts,omitempty"`
	// An AWS target's connector and region; an ECS target's cluster and service (the base
	// name of its blue-green services), an Asg target's base group name, an AwsLambda
	// target's function and the alias it routes through (empty: none).
	Aws      *plan.AwsConnector `json:"aws,omitempty"`
	Region   string             `json:"region,omitempty"`
	Cluster  string             `json:"cluster,omitempty"`
	Service  string             `json:"ecsService,omitempty"`
	Asg      string             `json:"asg,omitempty"`
	Function string             `json:"function,omitempty"`
	Alias    string             `json:"alias,omitempty"`
}

// InstancesTracked reports whether Gantry reads the instances of a deployment type.
func InstancesTracked(deploymentType string) bool {
	switch deploymentType {
	case "Kubernetes", "NativeHelm", "Ssh", "WinRm", "ECS", "Asg", "AwsLambda":
		return true
	}
	return false
}

// Instance is one running instance: a pod, an ECS task, an EC2 instance of a group, a Lambda
// version an alias routes to, a host.
type Instance struct {
	Name string `json:"name"`
	// Artifact is what it runs: a pod's or task's images, comma-separated; an EC2 instance's
	// AMI; a Lambda version's code; a host's artifact as deployed.
	Artifact string `json:"artifact"`
	// Node is where it runs: a pod's node, a task's or EC2 instance's availability zone, the
	// share of an alias's traffic a Lambda version gets.
	Node  string `json:"node,omitempty"`
	Ready bool   `json:"ready"`
}

// InstanceRead is one reading of a target: its instances (at most MaxInstancesKept listed,
// Count counts them all), what they run, and how that differs from what Gantry deployed.
type InstanceRead struct {
	Instances []Instance      `json:"instances,omitempty"`
	Count     int             `json:"count"`
	Ready     int             `json:"ready"`
	Artifacts []ArtifactCount `json:"artifacts,omitempty"`
	// Drift says, in sentences, how what runs differs from what Gantry deployed: other
	// artifacts, scaled outside Gantry.
	Drift []string `json:"drift,omitempty"`
	// Gone says why the target no longer exists (its namespace, its release, its workloads
	// deleted); empty while it does.
	Gone string `json:"gone,omitempty"`
}

// ReadOf is the reading of these instances: counted, grouped by artifact (most run first),
// listed up to MaxInstancesKept.
func ReadOf(all []Instance, drift []string) InstanceRead {
	r := InstanceRead{Count: len(all), Drift: drift}
	counts := map[string]int{}
	for _, i := range all {
		counts[i.Artifact]++
		if i.Ready {
			r.Ready++
		}
	}
	for a, n := range counts {
		r.Artifacts = append(r.Artifacts, ArtifactCount{Artifact: a, Count: n})
	}
	slices.SortFunc(r.Artifacts, func(a, b ArtifactCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Artifact, b.Artifact))
	})
	r.Instances = all[:min(len(all), MaxInstancesKept)]
	return r
}

// ArtifactCount is how many instances run one artifact.
type ArtifactCount struct {
	Artifact string `json:"artifact"`
	Count    int    `json:"count"`
}

// MaxInstancesKept bounds the instances a snapshot lists; Count counts them all.
const MaxInstancesKept = 200

// InstanceSnapshot is a target's last reading. A failed read keeps the reading before it and
// says so in Error: instances that could not be read are not zero instances.
type InstanceSnapshot struct {
	Key            DeploymentKey `json:"key"`
	DeploymentType string        `json:"deploymentType,omitempty"`
	Execution      string        `json:"execution,omitempty"`
	Version        string        `json:"version,omitempty"`
	// SyncedAt is the last successful read; TriedAt the last attempt.
	SyncedAt  time.Time       `json:"syncedAt,omitzero"`
	TriedAt   time.Time       `json:"triedAt,omitzero"`
	Error     string          `json:"error,omitempty"`
	Count     int             `json:"count"`
	Ready     int             `json:"ready"`
	Artifacts []ArtifactCount `json:"artifacts,omitempty"`
	Drift     []string        `json:"drift,omitempty"`
	Instances []Instance      `json:"instances,omitempty"`
}

// InstanceSync is the sync workflow's state, carried across its runs.
type InstanceSync struct {
	Target   InstanceTarget    `json:"target"`
	Snapshot *InstanceSnapshot `json:"snapshot,omitempty"`
}

// RecordDeploymentInput is the RecordDeployment activity's input: the stage's record and where
// its instances are read (nil: not read).
type RecordDeploymentInput struct {
	DeploymentRecord
	Instances *InstanceTarget `json:"instances,omitempty"`
}
