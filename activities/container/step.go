package container

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/gantry-cd/gantry/activities/container/wire"
	k8sstep "github.com/gantry-cd/gantry/activities/k8s"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/registry"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// stepSpec is what the family runs for a command step (Run, RunTests, Background, Plugin,
// Container): its type's rendered spec (stepspec) projected by its kind, with the container
// settings a build machine reads where it runs the container itself.
type stepSpec struct {
	Shell           string
	Command         string
	Entrypoint      []string
	Args            []string // a CI stage's service dependency's, after the entrypoint
	EnvVariables    map[string]text
	OutputVariables []stepspec.NameTypeValue
	Settings        map[string]any
	Reports         *stepspec.Reports
	image           imageSpec
}

// variable is the shell variable an output variable reads: its value names one, or its name.
func variable(o stepspec.NameTypeValue) string {
	if o.Value != "" {
		return string(o.Value)
	}
	return o.Name
}

// junitPaths are the JUnit report files a step names; none for another report type.
func junitPaths(r *stepspec.Reports) []string {
	if r == nil || r.Spec == nil || (r.Type != "" && r.Type != "JUnit") {
		return nil
	}
	return r.Spec.Paths
}

// Step runs one container step in its container of the group's pod.
func (a *Activity) Step(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	if in.Pod == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s is not in a containerized step group", in.Type, in.StepPath)
	}
	kd, err := kindOf(in)
	if err != nil {
		return contract.StepResult{}, err
	}
	spec, err := kd.decode(in)
	if err != nil {
		return contract.StepResult{}, err
	}
	inf, k, mask, err := a.connect(ctx, in.Pod.Pod.Pod)
	if err != nil {
		return contract.StepResult{}, err
	}
	info := activity.GetInfo(ctx)
	log, err := a.Logs.OpenLazy(in.ExecutionID, in.StepPath,
		fmt.Sprintf("# gantry: %s attempt %d in container %s of pod %s/%s", in.StepPath, info.Attempt, in.Pod.Container, inf.Namespace, in.Pod.Pod.Name))
	if err != nil {
		return contract.StepResult{}, err
	}
	defer log.Close()

	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()
	if err := a.waitRunning(runCtx, k, in, inf, mask); err != nil {
		return contract.StepResult{}, a.ended(ctx, runCtx, in, err)
	}
	if kd.helper != nil {
		res, err := kd.helper(a, runCtx, k, string(inf.Namespace), in, log)
		if err != nil {
			return res, a.ended(ctx, runCtx, in, err)
		}
		return res, log.Err()
	}
	var req wire.Request
	var image built
	if kd.builds() {
		req, image, err = buildRequest(ctx, a.Secrets, in, mask)
	} else {
		req, err = a.request(ctx, kd, in, spec, mask)
	}
	if err != nil {
		return contract.StepResult{}, err
	}
	req.Nonce = nonce()
	res, last, err := a.exec(runCtx, k, string(inf.Namespace), in.Pod.Pod.Name, in.Pod.Container, req, log, mask)
	if err != nil {
		return contract.StepResult{}, a.ended(ctx, runCtx, in, err)
	}
	if log.Err() != nil {
		return contract.StepResult{}, log.Err()
	}
	// Test reports are read however the command ended: a test run that fails exits non-zero.
	tests := a.testReports(runCtx, k, string(inf.Namespace), in, spec, log)
	if err := commandFailure("container "+in.Pod.Container, res, last, tests, mask); err != nil {
		return contract.StepResult{}, err
	}
	if kd.builds() {
		return contract.StepResult{Outputs: publishedImages(image, res.Outputs["digest"])}, nil
	}
	if kd.background {
		log.Line(fmt.Sprintf("# gantry: started (pid %d); it runs until the step group ends", res.PID))
		return contract.StepResult{}, nil
	}
	return contract.StepResult{Outputs: outputVariables(spec, res, mask), Tests: tests}, nil
}

// commandFailure is the step's failure, where it ran (a container, a build machine) named, when its command did not succeed: an error of the
// helper, a signal, a non-zero exit; nil otherwise. It carries the test reports read.
func commandFailure(where string, res wire.Result, last string, tests *contract.TestSummary, mask *secrets.Masker) error {
	switch {
	case res.Error != "" && res.ExitCode == 0:
		return contract.FailWithTests(contract.Unknown, tests, "%s: %s", where, mask.Apply(res.Error))
	case res.Signal != "":
		msg := fmt.Sprintf("%s: the command was killed by signal %s", where, res.Signal)
		if res.Signal == "KILL" {
			msg += " (out of memory, if the container has a memory limit)"
		}
		return contract.FailWithTests(contract.Unknown, tests, "%s%s", msg, lastLine(last))
	case res.ExitCode != 0:
		msg := fmt.Sprintf("%s: the command exited with code %d", where, res.ExitCode)
		if res.ExitCode == 137 {
			msg += " (a process was killed: out of memory, if the container has a memory limit)"
		}
		if res.Error != "" {
			msg += ": " + mask.Apply(res.Error)
		}
		return contract.FailWithTests(contract.Unknown, tests, "%s%s", msg, lastLine(last))
	}
	return nil
}

// outputVariables are the step's output variables from the command's result, nil without
// any; Secret ones are masked in the log and stand as the mask in the outputs.
func outputVariables(spec stepSpec, res wire.Result, mask *secrets.Masker) map[string]any {
	if len(spec.OutputVariables) == 0 {
		return nil
	}
	outs := map[string]any{}
	for _, o := range spec.OutputVariables {
		v := res.Outputs[variable(o)]
		if strings.EqualFold(o.Type, "Secret") {
			mask.Add(v)
			v = secrets.Mask
		}
		outs[o.Name] = v
	}
	return map[string]any{"outputVariables": outs}
}

// testReports reads the JUnit reports a step names from its pod (through the helper
// container, which shares the workspace) into a summary; nil when it names none. A report
// that cannot be read is a line in the step's log, not a failure of the step.
func (a *Activity) testReports(ctx context.Context, k *cluster, ns string, in contract.StepInput, spec stepSpec, log *logs.Writer) *contract.TestSummary {
	paths := junitPaths(spec.Reports)
	if len(paths) == 0 {
		return nil
	}
	var out bytes.Buffer
	var errs strings.Builder
	cmd := append([]string{"/gantry-helper", "reports", wire.Workspace}, paths...)
	if err := stream(ctx, k, ns, in.Pod.Pod.Name, contract.PodHelperContainer, cmd, nil, &out, &errs); err != nil {
		log.Line(fmt.Sprintf("# gantry: test reports %v could not be read: %v %s", paths, err, strings.TrimSpace(errs.String())))
		return nil
	}
	return summarizeReports(&out, paths, log)
}

// summarizeReports reads the JUnit reports of a tar stream (gantry-helper reports) into a
// summary, each report that is not JUnit a line in the step's log.
func summarizeReports(out io.Reader, paths []string, log *logs.Writer) *contract.TestSummary {
	sum := &contract.TestSummary{}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		data, err := io.ReadAll(tr)
		if err == nil {
			err = addJUnit(sum, data)
		}
		if err != nil {
			log.Line(fmt.Sprintf("# gantry: test report %s is not JUnit XML: %v", h.Name, err))
		}
	}
	if sum.Reports == 0 {
		log.Line(fmt.Sprintf("# gantry: no test report matches %v", paths))
	} else {
		log.Line(fmt.Sprintf("# gantry: tests: %d, failed: %d, skipped: %d (%d reports)", sum.Total, sum.Failed, sum.Skipped, sum.Reports))
	}
	return sum
}

func lastLine(s string) string {
	if s == "" {
		return ""
	}
	return "; last output: " + s
}

// ended turns an error that ended a step early into its outcome: an abort stays an abort, the
// step's own deadline is a Timeout.
func (a *Activity) ended(ctx, runCtx context.Context, in contract.StepInput, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.Fail(contract.Timeout, "container %s: the step ran longer than its timeout %s and was stopped", in.Pod.Container, in.Timeout)
	}
	return err
}

// request is what the helper runs: secrets the pod carries stand in as placeholders, the
// others travel on the exec stream (never in the pod spec or history).
func (a *Activity) request(ctx context.Context, kd kind, in contract.StepInput, spec stepSpec, mask *secrets.Masker) (wire.Request, error) {
	inPod := map[string]bool{}
	for _, id := range in.Pod.Pod.Secrets {
		inPod[id] = true
	}
	standIn := func(id string) (string, bool) {
		if inPod[id] {
			return Placeholder(id), true
		}
		return "", false
	}
	req, expand, err := commandRequest(ctx, a.Secrets, mask, standIn, in, spec, wire.Workspace)
	if err != nil {
		return req, err
	}
	if kd.finish != nil {
		if err := kd.finish(a, ctx, in, spec, &req, expand); err != nil {
			return req, err
		}
	}
	for _, o := range spec.OutputVariables {
		req.Outputs = append(req.Outputs, variable(o))
	}
	if len(in.Pod.Pod.Secrets) > 0 {
		req.Secrets = map[string]string{}
		for _, id := range in.Pod.Pod.Secrets {
			req.Secrets[Placeholder(id)] = SecretEnv(id)
		}
	}
	return req, nil
}

// commandRequest is what the helper runs for a step's command in dir: its command and
// environment with the secrets they reference expanded (or stood in for by standIn's
// placeholders), and the expansion, for the step type's further fields.
func commandRequest(ctx context.Context, r secrets.Resolver, mask *secrets.Masker, standIn func(string) (string, bool), in contract.StepInput, spec stepSpec, dir string) (wire.Request, func(what, s string) (string, error), error) {
	req := wire.Request{Shell: spec.Shell, Dir: dir, Env: maps.Clone(in.Env)}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	expand := func(what, s string) (string, error) {
		out, err := secrets.ExpandTo(ctx, r, mask, s, standIn)
		if err != nil {
			return "", contract.Fail(contract.Unknown, "%s: %v", what, err)
		}
		return out, nil
	}
	var err error
	if req.Command, err = expand("command", spec.Command); err != nil {
		return req, expand, err
	}
	for k, v := range spec.EnvVariables {
		if req.Env[k], err = expand("environment variable "+k, string(v)); err != nil {
			return req, expand, err
		}
	}
	return req, expand, nil
}

// runEntrypoint: a Run step without a command runs its image's entrypoint, as a Plugin step.
func (a *Activity) runEntrypoint(ctx context.Context, in contract.StepInput, _ stepSpec, req *wire.Request, _ func(what, s string) (string, error)) error {
	if req.Command != "" {
		return nil
	}
	var err error
	req.Entrypoint, err = a.imageEntrypoint(ctx, in, nil)
	return err
}

// pluginEntrypoint: a Plugin step runs its entrypoint, or its image's, with its settings in
// the environment by Drone's convention: each setting is PLUGIN_<NAME>; lists are
// comma-joined, objects JSON.
func (a *Activity) pluginEntrypoint(ctx context.Context, in contract.StepInput, spec stepSpec, req *wire.Request, expand func(what, s string) (string, error)) error {
	for k, v := range spec.Settings {
		s, err := expand("setting "+k, settingText(v))
		if err != nil {
			return err
		}
		req.Env["PLUGIN_"+strings.ToUpper(k)] = s
	}
	req.Command, req.Entrypoint = "", spec.Entrypoint
	if len(req.Entrypoint) > 0 {
		return nil
	}
	var err error
	req.Entrypoint, err = a.imageEntrypoint(ctx, in, nil)
	return err
}

// backgroundEntrypoint: a Background step is left running; it runs its entrypoint with its
// args, or its command, or its image's entrypoint with its args.
func (a *Activity) backgroundEntrypoint(ctx context.Context, in contract.StepInput, spec stepSpec, req *wire.Request, _ func(what, s string) (string, error)) error {
	req.Background = true
	if len(spec.Entrypoint) > 0 {
		req.Entrypoint = append(slices.Clone(spec.Entrypoint), spec.Args...)
		return nil
	}
	if req.Command == "" || len(spec.Args) > 0 {
		var err error
		req.Entrypoint, err = a.imageEntrypoint(ctx, in, spec.Args)
		return err
	}
	return nil
}

// nonce marks a request's result line.
func nonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// command makes a kind's command of a projection of the step type's spec S.
func command[S any](project func(S) stepSpec) func(in contract.StepInput) (stepSpec, error) {
	return func(in contract.StepInput) (stepSpec, error) {
		sp, err := stepspec.Decode[S](in.Spec)
		if err != nil {
			return stepSpec{}, contract.Fail(contract.Unknown, "%s step %s: spec: %v", in.Type, in.StepPath, err)
		}
		return project(sp), nil
	}
}

// imageOf is what a build machine reads of a container's settings.
func imageOf(set stepspec.ContainerSettings) imageSpec {
	return imageSpec{Image: set.Image, ConnectorRef: set.ConnectorRef, ImagePullPolicy: set.ImagePullPolicy,
		Privileged: set.Privileged, RunAsUser: set.RunAsUser}
}

// The command steps' projections.

func runCommand(sp stepspec.RunSpec) stepSpec {
	return stepSpec{Shell: sp.Shell, Command: sp.Command, EnvVariables: sp.EnvVariables, OutputVariables: sp.OutputVariables,
		Reports: sp.Reports, image: imageOf(sp.ContainerSettings)}
}

func backgroundCommand(sp stepspec.BackgroundSpec) stepSpec {
	img := imageOf(sp.ContainerSettings)
	img.PortBindings = sp.PortBindings
	return stepSpec{Shell: sp.Shell, Command: sp.Command, Entrypoint: sp.Entrypoint, Args: sp.Args, EnvVariables: sp.EnvVariables,
		Reports: sp.Reports, image: img}
}

func pluginCommand(sp stepspec.PluginSpec) stepSpec {
	return stepSpec{Entrypoint: sp.Entrypoint, Settings: sp.Settings, Reports: sp.Reports, image: imageOf(sp.ContainerSettings)}
}

func containerCommand(sp stepspec.ContainerSpec) stepSpec {
	return stepSpec{Shell: sp.Shell, Command: sp.Command, Entrypoint: sp.Entrypoint, EnvVariables: sp.EnvVariables,
		OutputVariables: sp.OutputVariables, Reports: sp.Reports, image: imageOf(sp.ContainerSettings)}
}

// runTestsCommand reads a RunTests step as the Run step it is: preCommand, its build tool
// with args, then postCommand.
func runTestsCommand(in contract.StepInput) (stepSpec, error) {
	sp, err := stepspec.Decode[stepspec.RunTestsSpec](in.Spec)
	if err != nil {
		return stepSpec{}, contract.Fail(contract.Unknown, "RunTests spec: %v", err)
	}
	script, ok := stepspec.RunTestsCommand(sp.BuildTool, sp.Args, sp.PreCommand, sp.PostCommand)
	if !ok {
		return stepSpec{}, contract.Fail(contract.Unknown, "RunTests: buildTool %q is not one Gantry knows", sp.BuildTool)
	}
	return stepSpec{Shell: sp.Shell, Command: script, EnvVariables: sp.EnvVariables, OutputVariables: sp.OutputVariables,
		Reports: sp.Reports, image: imageOf(sp.ContainerSettings)}, nil
}

func settingText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = settingText(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// imageEntrypoint is what the step's image runs, as its configuration names it: its
// entrypoint, then args when given (as Docker's args replace the image's command), else its
// command. The step container's own runs gantry-helper instead, so the helper starts it.
func (a *Activity) imageEntrypoint(ctx context.Context, in contract.StepInput, args []string) ([]string, error) {
	for _, c := range in.Pod.Pod.Containers {
		if c.Name == in.Pod.Container {
			cfg, err := imageConfig(ctx, c.Image, in.Pod.Pod.Pod.Registries[c.ConnectorRef], a.Secrets)
			if err != nil {
				return nil, err
			}
			cmd := cfg.Cmd
			if len(args) > 0 {
				cmd = args
			}
			ep := append(append([]string{}, cfg.Entrypoint...), cmd...)
			if len(ep) == 0 {
				return nil, contract.Fail(contract.Unknown, "image %s names no entrypoint or command; set the step's entrypoint", c.Image)
			}
			return ep, nil
		}
	}
	return nil, contract.Fail(contract.Unknown, "container %s is not in pod %s", in.Pod.Container, in.Pod.Pod.Name)
}

// pullFailures are container waiting reasons that mean the image will not start.
var pullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true}

// waitRunning waits until the step's container runs, recreating the pod once if it is gone
// or can no longer run, within the group's init timeout.
func (a *Activity) waitRunning(ctx context.Context, k *cluster, in contract.StepInput, inf *infra, mask *secrets.Masker) error {
	ns, name, cname := string(inf.Namespace), in.Pod.Pod.Name, in.Pod.Container
	deadline := time.Now().Add(inf.initTimeout())
	recreated := false
	for {
		pod, err := k.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && !runs(pod)):
			if recreated {
				return contract.Fail(contract.Unknown, "pod %s/%s of step group %s is gone again after it was recreated", ns, name, in.Pod.Pod.Group)
			}
			why := "it no longer exists"
			if err == nil {
				why = podEnd(pod)
			}
			// A step of a run that closed (terminated) must not bring its pod back.
			if a.Closed != nil {
				if closed, cerr := a.Closed(ctx, in.Pod.Pod.WorkflowID, in.Pod.Pod.RunID); cerr == nil && closed {
					return contract.Fail(contract.Unknown, "pod %s/%s: %s, and its run has ended", ns, name, why)
				}
			}
			a.log().Sugar().Infow("recreating step group pod", "pod", name, "namespace", ns, "why", why)
			if err := a.ensure(ctx, k, in.Pod.Pod, inf, mask, true); err != nil {
				return err
			}
			recreated, deadline = true, time.Now().Add(inf.initTimeout())
			continue
		case err != nil:
			return k8sstep.Classify(ctx, err, "read pod %s/%s", ns, name)
		}
		if ok, err := containerReady(pod, cname); ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return contract.Fail(contract.Timeout, "container %s of pod %s/%s did not start within the init timeout %s: %s",
				cname, ns, name, inf.initTimeout(), waiting(pod, cname))
		}
		if err := watchPod(ctx, k, ns, name, pod.ResourceVersion, time.Until(deadline)); err != nil {
			return err
		}
	}
}

// containerReady reports whether a container runs, or why it never will.
func containerReady(pod *corev1.Pod, name string) (bool, error) {
	for _, s := range pod.Status.InitContainerStatuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return false, contract.Fail(contract.Unknown, "pod %s: Gantry's helper container %s failed (%s, exit code %d): %s", pod.Name, s.Name, t.Reason, t.ExitCode, t.Message)
		}
		if w := s.State.Waiting; w != nil && pullFailures[w.Reason] {
			return false, contract.Fail(contract.Unknown, "pod %s: Gantry's helper image %s cannot be pulled (%s): %s; set the worker's --helper-image or the group's harnessImageConnectorRef", pod.Name, s.Image, w.Reason, w.Message)
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != name {
			continue
		}
		switch {
		case s.State.Running != nil:
			return true, nil
		case s.State.Terminated != nil:
			t := s.State.Terminated
			return false, contract.Fail(contract.Unknown, "container %s of pod %s ended (%s, exit code %d) before its step ran%s", name, pod.Name, t.Reason, t.ExitCode, suffix(t.Message))
		case s.State.Waiting != nil && pullFailures[s.State.Waiting.Reason]:
			w := s.State.Waiting
			cat := contract.Unknown
			if strings.Contains(w.Message, "401") || strings.Contains(strings.ToLower(w.Message), "unauthorized") {
				cat = contract.Authentication
			}
			return false, contract.Fail(cat, "container %s: image %s cannot be pulled (%s)%s", name, s.Image, w.Reason, suffix(w.Message))
		}
	}
	return false, nil
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// podEnd says why a pod no longer runs.
func podEnd(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "it is being deleted"
	}
	if p.Status.Reason != "" {
		return fmt.Sprintf("%s: %s", p.Status.Reason, p.Status.Message)
	}
	return "its phase is " + string(p.Status.Phase)
}

// waiting says what a container waits for.
func waiting(p *corev1.Pod, name string) string {
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if s.Name == name || (s.State.Waiting != nil && s.Name == helperContainer) {
			if w := s.State.Waiting; w != nil {
				return fmt.Sprintf("container %s waits (%s)%s", s.Name, w.Reason, suffix(w.Message))
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("the pod is not scheduled (%s)%s", c.Reason, suffix(c.Message))
		}
	}
	return "the pod's phase is " + string(p.Status.Phase)
}

// watchPod returns when the pod changes after resourceVersion, or after at most d.
func watchPod(ctx context.Context, k *cluster, ns, name, rv string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	secs := int64(d/time.Second) + 1
	w, err := k.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: rv, TimeoutSeconds: &secs})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond) // the next Get reports what is wrong
		return nil
	}
	defer w.Stop()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w.ResultChan():
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// exec runs the helper in a container and returns its result and the last line of output.
func (a *Activity) exec(ctx context.Context, k *cluster, ns, pod, container string, req wire.Request, log *logs.Writer, mask *secrets.Masker) (wire.Result, string, error) {
	line, _ := json.Marshal(req)
	stdin, stdinW := io.Pipe()
	go func() {
		_, _ = stdinW.Write(append(line, '\n'))
		<-ctx.Done() // closing stdin tells the helper to stop the command
		stdinW.Close()
	}()
	out := &output{nonce: req.Nonce, log: log, mask: mask}
	errOut := &output{log: log, mask: mask}
	err := stream(ctx, k, ns, pod, container, []string{wire.Helper, "run"}, stdin, out, errOut)
	result, last := out.flush()
	_, errLast := errOut.flush()
	if result != nil {
		return *result, last, nil
	}
	if ctx.Err() != nil {
		return wire.Result{}, "", ctx.Err()
	}
	if err != nil {
		return wire.Result{}, "", err
	}
	return wire.Result{}, "", contract.Fail(contract.Unknown, "container %s of pod %s/%s: gantry-helper ended without a result%s", container, ns, pod, lastLine(errLast))
}

// stream runs a command in a container through the exec API (WebSocket, else SPDY).
func stream(ctx context.Context, k *cluster, ns, pod, container string, command []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := k.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(k.cfg, http.MethodGet, u.String())
	if err != nil {
		return contract.Fail(contract.Unknown, "exec in %s/%s: %v", pod, container, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.cfg, http.MethodPost, u)
	if err != nil {
		return contract.Fail(contract.Unknown, "exec in %s/%s: %v", pod, container, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return contract.Fail(contract.Unknown, "exec in %s/%s: %v", pod, container, err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil && ctx.Err() == nil {
		return contract.Fail(contract.Unknown, "exec %s in container %s of pod %s/%s: %v", command[len(command)-1], container, ns, pod, err)
	}
	return err
}

// output splits a stream into log lines (masked) and finds the helper's result line. Its
// writer may still run after the exec returned (a cancelled stream does not wait for its
// copies), hence the lock.
type output struct {
	mu     sync.Mutex
	done   bool // flushed: later writes are dropped
	nonce  string
	log    *logs.Writer
	mask   *secrets.Masker
	buf    []byte
	last   string
	result *wire.Result
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return len(p), nil // the step has ended; its log may be closed
	}
	o.buf = append(o.buf, p...)
	for {
		i := strings.IndexByte(string(o.buf), '\n')
		if i < 0 {
			break
		}
		o.line(string(o.buf[:i]))
		o.buf = o.buf[i+1:]
	}
	return len(p), nil
}

// flush logs what is left of the stream and returns the result line and the last line.
func (o *output) flush() (*wire.Result, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = true
	if len(o.buf) > 0 {
		o.line(string(o.buf))
		o.buf = nil
	}
	return o.result, o.last
}

func (o *output) line(s string) {
	if o.nonce != "" {
		if i := strings.Index(s, wire.ResultPrefix+o.nonce+" "); i >= 0 {
			var r wire.Result
			if json.Unmarshal([]byte(s[i+len(wire.ResultPrefix)+len(o.nonce)+1:]), &r) == nil {
				o.result = &r
			}
			s = s[:i]
			if s == "" {
				return
			}
		}
	}
	s = strings.TrimSuffix(s, "\r")
	if o.mask != nil {
		s = o.mask.Apply(s)
	}
	o.log.Line(s)
	if t := strings.TrimSpace(s); t != "" {
		o.last = t
	}
}

// imageConfig reads an image's configuration from its registry, with the connector's
// credentials when the step names one.
func imageConfig(ctx context.Context, image string, c plan.RegistryConnector, r secrets.Resolver) (*v1.Config, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "image %q: %v", image, err)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	if c.ID != "" {
		if opts, err = registry.Options(ctx, r, &c); err != nil {
			return nil, err
		}
	}
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, registry.Classify(err, "image "+image)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, registry.Classify(err, "image "+image)
	}
	return &cf.Config, nil
}
