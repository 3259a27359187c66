// Package container runs containerized step groups (the reference's stepGroupInfra): one pod
// per group run on the user's cluster, created when the group starts and deleted when it ends,
// with one container per container step (Run, Background, Plugin). Each step container's main
// process is gantry-helper (cmd/gantry-helper), copied in by an init container; a step runs
// through the Kubernetes exec API as `gantry-helper run`, which receives the step on stdin,
// streams its output back and ends with its exit code and output variables. Secrets reach the
// containers from a Kubernetes Secret created with the pod, never in the pod spec or history.
package container

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	k8sstep "github.com/gantry-cd/gantry/activities/k8s"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// DefaultHelperImage is gantry-helper's image when the worker names none.
const DefaultHelperImage = "ghcr.io/gantry-cd/gantry-helper:1"

// Activity runs containerized step groups.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// HelperImage is gantry-helper's image; "" is DefaultHelperImage. A group's
	// harnessImageConnectorRef pulls it from that connector's registry instead.
	HelperImage string
	// BuildKitImage is the image BuildAndPush steps run in; "" is DefaultBuildKitImage. It
	// follows harnessImageConnectorRef as the helper's image does.
	BuildKitImage string
	// Closed reports whether a workflow run has closed: the pods of closed runs are deleted
	// when a group starts in their namespace. nil: no garbage collection.
	Closed func(ctx context.Context, workflowID, runID string) (bool, error)
	Log    *zap.Logger

	mu      sync.Mutex
	clients map[string]*cluster
}

type cluster struct {
	cfg *rest.Config
	cs  kubernetes.Interface
}

// client returns the (cached) client of a connector's cluster.
func (a *Activity) client(ctx context.Context, c plan.Connector, mask *secrets.Masker) (*cluster, error) {
	cfg, err := k8sstep.RestConfig(ctx, c, a.Secrets, mask)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(cfg.Host + "\x00" + cfg.BearerToken + "\x00" + string(cfg.CAData) + "\x00" + c.Kubeconfig + "\x00" + c.Context))
	key := hex.EncodeToString(sum[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if k, ok := a.clients[key]; ok {
		return k, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "connector %s: %v", c.ID, err)
	}
	if a.clients == nil {
		a.clients = map[string]*cluster{}
	}
	k := &cluster{cfg: cfg, cs: cs}
	a.clients[key] = k
	return k, nil
}

// connect reads a pod's rendered infrastructure and returns it with its cluster's client and
// the masker of the secrets used to reach it.
func (a *Activity) connect(ctx context.Context, pod plan.Pod) (*infra, *cluster, *secrets.Masker, error) {
	inf, err := decodeInfra(pod.Infra)
	if err != nil {
		return nil, nil, nil, err
	}
	mask := &secrets.Masker{}
	k, err := a.client(ctx, pod.Connector, mask)
	if err != nil {
		return nil, nil, nil, err
	}
	return inf, k, mask, nil
}

func (a *Activity) log() *zap.Logger {
	if a.Log == nil {
		return zap.NewNop()
	}
	return a.Log
}

// Start creates a group's pod and its Secrets, deleting first the pods of closed runs in its
// namespace. It returns once the objects exist: each step waits for its own container.
func (a *Activity) Start(ctx context.Context, in contract.PodInput) error {
	inf, k, mask, err := a.connect(ctx, in.Pod)
	if err != nil {
		return err
	}
	a.collect(ctx, k, string(inf.Namespace))
	return a.ensure(ctx, k, in, inf, mask, false)
}

// ensure creates the pod, or keeps the one that exists while it still runs; replace deletes a
// pod that no longer runs (evicted, failed) and creates it again.
func (a *Activity) ensure(ctx context.Context, k *cluster, in contract.PodInput, inf *infra, mask *secrets.Masker, replace bool) error {
	ns := string(inf.Namespace)
	data := map[string][]byte{}
	for _, id := range in.Secrets {
		v, err := a.Secrets.Resolve(ctx, id)
		if err != nil {
			return contract.Fail(contract.Unknown, "step group %s: secret %q: %v", in.Group, id, err)
		}
		mask.Add(v)
		data[SecretEnv(id)] = []byte(v)
	}
	pull, err := a.pullSecret(ctx, in, inf, mask)
	if err != nil {
		return err
	}
	pod, objs, err := podObjects(in, inf, data, pull, a.ownImage(a.HelperImage, DefaultHelperImage, in, inf), a.ownImage(a.BuildKitImage, DefaultBuildKitImage, in, inf))
	if err != nil {
		return err
	}
	for _, s := range objs {
		_, err := k.cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = k.cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		}
		if err != nil {
			return k8sstep.Classify(ctx, err, "step group %s: create Secret %s/%s", in.Group, ns, s.Name)
		}
	}
	_, err = k.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := k.cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && (!replace || runs(cur)) {
			return nil // created by an earlier attempt of this activity
		}
		if err := a.deleteAndWait(ctx, k, ns, pod.Name); err != nil {
			return err
		}
		_, err = k.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	}
	if err != nil {
		return k8sstep.Classify(ctx, err, "step group %s: create pod %s/%s", in.Group, ns, pod.Name)
	}
	a.log().Info("created step group pod", zap.String("execution", in.ExecutionID), zap.String("group", in.Group),
		zap.String("namespace", ns), zap.String("pod", pod.Name))
	return nil
}

// runs reports whether a pod can still run steps.
func runs(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded
}

func (a *Activity) deleteAndWait(ctx context.Context, k *cluster, ns, name string) error {
	zero := int64(0)
	err := k.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return k8sstep.Classify(ctx, err, "delete pod %s/%s", ns, name)
	}
	for {
		if _, err := k.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownImage is one of Gantry's images (the helper's, BuildKit's): img or def, from the group's
// harnessImageConnectorRef registry when it names one.
func (a *Activity) ownImage(img, def string, in contract.PodInput, inf *infra) string {
	if img == "" {
		img = def
	}
	if r, ok := in.Pod.Registries[string(inf.HarnessImageConnectorRef)]; ok && inf.HarnessImageConnectorRef != "" {
		path := img
		if i := strings.IndexByte(img, '/'); i > 0 && strings.ContainsAny(img[:i], ".:") {
			path = img[i+1:]
		}
		host := registryHost(r)
		if strings.HasPrefix(host, "https://index.docker.io") {
			return path
		}
		return host + "/" + path
	}
	return img
}

// pullSecret is the .dockerconfigjson of the registries with credentials the pod's images
// come from, or nil.
func (a *Activity) pullSecret(ctx context.Context, in contract.PodInput, inf *infra, mask *secrets.Masker) ([]byte, error) {
	refs := []string{string(inf.HarnessImageConnectorRef)}
	for _, c := range in.Containers {
		refs = append(refs, c.ConnectorRef)
	}
	creds := map[string][2]string{}
	for _, ref := range refs {
		r, ok := in.Pod.Registries[ref]
		if ref == "" || !ok || r.PasswordRef == "" {
			continue
		}
		user, pw, err := secrets.Login(ctx, a.Secrets, r.ID, r.Username, r.UsernameRef, r.PasswordRef)
		if err != nil {
			return nil, err
		}
		mask.Add(pw)
		creds[registryHost(r)] = [2]string{user, pw}
	}
	return dockerConfig(creds), nil
}

// Stop deletes a group's pod and Secrets, after copying the Background steps' output (their
// containers' logs) into their step logs. A pod already gone is not an error.
func (a *Activity) Stop(ctx context.Context, in contract.PodInput) error {
	inf, k, mask, err := a.connect(ctx, in.Pod)
	if err != nil {
		return err
	}
	ns := string(inf.Namespace)
	for _, c := range in.Containers {
		if kinds[c.Type].background {
			a.copyLog(ctx, k, ns, in, c, mask)
		}
	}
	return a.remove(ctx, k, ns, in.Name)
}

// remove deletes a pod and the Secrets created with it.
func (a *Activity) remove(ctx context.Context, k *cluster, ns, name string) error {
	zero := int64(0)
	err := k.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return k8sstep.Classify(ctx, err, "delete pod %s/%s", ns, name)
	}
	for _, s := range []string{name, name + "-pull"} {
		err := k.cs.CoreV1().Secrets(ns).Delete(ctx, s, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return k8sstep.Classify(ctx, err, "delete Secret %s/%s", ns, s)
		}
	}
	return nil
}

// collect deletes the group pods in a namespace whose workflow run has closed: left by a
// worker that died, or by a run that was terminated. Best effort: it never fails a group.
func (a *Activity) collect(ctx context.Context, k *cluster, ns string) {
	if a.Closed == nil {
		return
	}
	pods, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelManaged + "=" + managedBy + "," + labelPod})
	if err != nil {
		a.log().Warn("list step group pods for garbage collection", zap.String("namespace", ns), zap.Error(err))
		return
	}
	for _, p := range pods.Items {
		wf, run := p.Annotations[annWorkflow], p.Annotations[annRun]
		if wf == "" || p.DeletionTimestamp != nil {
			continue
		}
		closed, err := a.Closed(ctx, wf, run)
		if err != nil {
			a.log().Warn("cannot tell whether a step group pod's run has closed", zap.String("pod", p.Name), zap.String("workflow", wf), zap.Error(err))
			continue
		}
		if !closed {
			continue
		}
		if err := a.remove(ctx, k, ns, p.Name); err != nil {
			a.log().Warn("delete the pod of a closed run", zap.String("namespace", ns), zap.String("pod", p.Name), zap.Error(err))
			continue
		}
		a.log().Info("deleted the pod of a closed run", zap.String("namespace", ns), zap.String("pod", p.Name), zap.String("workflow", wf))
	}
}

// copyLog appends a Background step's container log to its step log.
func (a *Activity) copyLog(ctx context.Context, k *cluster, ns string, in contract.PodInput, c contract.PodContainer, mask *secrets.Masker) {
	for _, id := range in.Secrets {
		if v, err := a.Secrets.Resolve(ctx, id); err == nil {
			mask.Add(v)
		}
	}
	b, err := k.cs.CoreV1().Pods(ns).GetLogs(in.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
	if err != nil || len(b) == 0 {
		return
	}
	w, err := a.Logs.Open(in.ExecutionID, c.Step)
	if err != nil {
		return
	}
	defer w.Close()
	w.Line(fmt.Sprintf("# gantry: output of the Background step's container %s while the group ran", c.Name))
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.Line(mask.Apply(line))
	}
}
