package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
)

// pods are the pods of containerized step groups and Container steps.
type pods struct {
	*stageRun
	own map[string]*contract.PodInput // Container steps' pods, by node path
}

// podTimeout bounds creating or deleting a group's pod (the steps wait for their containers).
const podTimeout = 2 * time.Minute

// podFor returns the pod of the containerized group a frame runs in, or nil.
func (f *frame) podFor() *contract.PodInput {
	for x := f; x != nil; x = x.parent {
		if x.pod != nil {
			return x.pod
		}
	}
	return nil
}

// startPod creates the pod of a containerized group (or of a Container step, n itself): its
// infrastructure and its containers' images rendered in n's scope.
func (s *pods) startPod(ctx workflow.Context, n *plan.Node, t *Node, fqn string, fr *frame) (*contract.PodInput, *contract.Failure) {
	if n.Pod.Machine != nil {
		return s.build.startMachine(ctx, n, t, fqn, fr)
	}
	scope := expressions.NewScope(s.rootFor(fr), fqn)
	opts := expressions.Options{Unresolved: expressions.UnresolvedFail}
	infra, err := renderSpec(n.Pod.Infra, scope, opts, "", func(string) bool { return false })
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "stepGroupInfra: " + err.Error()}
	}
	shared, err := renderSpec(n.Pod.SharedPaths, scope, opts, "", func(string) bool { return false })
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "sharedPaths: " + err.Error()}
	}
	info := workflow.GetInfo(ctx)
	pod := plan.Pod{Connector: n.Pod.Connector, Infra: infra, SharedPaths: shared, Registries: n.Pod.Registries, Git: n.Pod.Git, Aws: n.Pod.Aws}
	in := &contract.PodInput{ExecutionID: s.in.ExecutionID, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Group: t.Path, Name: podName(s.in.ExecutionID, t.Path, n.ID), Pod: pod}
	seen := map[string]bool{}
	// visit collects the containers of the steps below prefix, the node path of their parent.
	var visit func(nodes []*plan.Node, prefix string) *contract.Failure
	visit = func(nodes []*plan.Node, prefix string) *contract.Failure {
		for _, c := range nodes {
			path := prefix
			if c.ID != "" && c != n {
				path = prefix + "." + c.ID
			}
			// A Container step inside the group has a pod of its own; GitClone and
			// DownloadManifests run in the pod's own gantry container, which every pod has.
			if c.Kind == plan.KindStep && traitsOf(c).Container == plan.ContainerOwn && (c.Pod == nil || c == n) {
				pc, f := podContainer(c, scope, path)
				if f != nil {
					return f
				}
				if seen[pc.Name] {
					continue
				}
				seen[pc.Name] = true
				in.Containers = append(in.Containers, pc)
				raw, _ := json.Marshal(c.Spec)
				for _, id := range contract.SecretRefs(string(raw)) {
					if !seen["secret:"+id] {
						seen["secret:"+id] = true
						in.Secrets = append(in.Secrets, id)
					}
				}
			}
			if f := visit(c.Children, path); f != nil {
				return f
			}
			if f := visit(c.Rollback, path+"."+rollbackID); f != nil {
				return f
			}
		}
		return nil
	}
	if n.Kind == plan.KindStep {
		if f := visit([]*plan.Node{n}, t.Path); f != nil {
			return nil, f
		}
	} else if f := visit(n.Children, t.Path); f != nil {
		return nil, f
	} else if f := visit(n.Rollback, t.Path+"."+rollbackID); f != nil {
		return nil, f
	}
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, s.podOptions(t.Path+" (pod)")), contract.PodStart, in).Get(ctx, nil)
	if err != nil {
		return nil, contract.Classify(err)
	}
	return in, nil
}

// stopPod deletes a group's pod whatever ended the group, an abort included.
func (s *pods) stopPod(ctx workflow.Context, pod *contract.PodInput) {
	if pod.Pod.Machine != nil {
		s.build.stopMachine(ctx, pod)
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, s.podOptions(pod.Group+" (pod cleanup)")), contract.PodStop, pod).Get(dctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("delete step group pod", "pod", pod.Name, "error", err)
	}
}

func (s *pods) podOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: podTimeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: s.in.Settings.InfraAttempts},
	}
}

// podContainer is a container step's container, its image settings rendered.
func podContainer(n *plan.Node, scope *expressions.Scope, step string) (contract.PodContainer, *contract.Failure) {
	spec, _ := n.Spec.(map[string]any)
	str := func(key string) (string, *contract.Failure) {
		v, ok := spec[key].(string)
		if !ok || !expressions.Has(v) {
			return v, nil
		}
		out, err := expressions.RenderString(v, scope, expressions.Options{Unresolved: expressions.UnresolvedFail})
		if err != nil {
			return "", &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("step %s: %s: %v (a container's settings are rendered when its group starts)", n.ID, key, err)}
		}
		return out, nil
	}
	c := contract.PodContainer{Name: containerName(n.ID), Step: step, Type: n.Type}
	var f *contract.Failure
	if c.Image, f = str("image"); f != nil {
		return c, f
	}
	if c.ConnectorRef, f = str("connectorRef"); f != nil {
		return c, f
	}
	if c.ImagePullPolicy, f = str("imagePullPolicy"); f != nil {
		return c, f
	}
	priv, f := str("privileged")
	if f != nil {
		return c, f
	}
	c.Privileged = priv == "true"
	uid, f := str("runAsUser")
	if f != nil {
		return c, f
	}
	if uid != "" {
		var u int64
		if _, err := fmt.Sscan(uid, &u); err != nil {
			return c, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("step %s: runAsUser %q is not a number", n.ID, uid)}
		}
		c.RunAsUser = &u
	}
	if r, ok := spec["resources"].(map[string]any); ok {
		if l, ok := r["limits"].(map[string]any); ok {
			c.CPU, _ = l["cpu"].(string)
			c.Memory, _ = l["memory"].(string)
		}
	}
	return c, nil
}

// stepPod is where a container step runs: a Container step's own pod, or its group's; nil
// for other steps or outside a containerized group.
func (s *pods) stepPod(n *plan.Node, t *Node, fr *frame) *contract.PodStep {
	where := traitsOf(n).Container
	if where == "" {
		return nil
	}
	pod := s.own[t.Path]
	if pod == nil {
		pod = fr.podFor()
	}
	if pod == nil {
		return nil
	}
	if where == plan.ContainerHelper {
		return &contract.PodStep{Pod: *pod, Container: contract.PodHelperContainer}
	}
	return &contract.PodStep{Pod: *pod, Container: containerName(n.ID)}
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// containerName is a step's container name: its identifier as a DNS label.
func containerName(id string) string {
	name := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(strings.ReplaceAll(id, "_", "-")), ""), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	return "step-" + name
}

// podName names a group run's pod: unique per execution and group path, readable by its group.
func podName(execution, path, id string) string {
	sum := sha256.Sum256([]byte(execution + "\x00" + path))
	short := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(strings.ReplaceAll(id, "_", "-")), ""), "-")
	if len(short) > 30 {
		short = short[:30]
	}
	return "gantry-" + short + "-" + hex.EncodeToString(sum[:6])
}
