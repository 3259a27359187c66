package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gantry-cd/gantry/contract"
)

// errRolloutFailed marks a rollout the controller gave up on (it will not finish by waiting).
var errRolloutFailed = errors.New("rollout failed")

// rolloutState is a workload's progress: done, or a message saying what it waits for.
// Its logic follows `kubectl rollout status`.
func rolloutState(u *unstructured.Unstructured) (bool, string, error) {
	if isWorkload(u.GetKind()) {
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if observed < u.GetGeneration() {
			return false, "waiting for the controller to observe the new spec", nil
		}
	}
	num := func(path ...string) int64 {
		v, _, _ := unstructured.NestedInt64(u.Object, path...)
		return v
	}
	switch u.GetKind() {
	case "Deployment":
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Progressing" && m["reason"] == "ProgressDeadlineExceeded" {
				return false, "", fmt.Errorf("%w: progress deadline exceeded: %v", errRolloutFailed, m["message"])
			}
		}
		want := int64(1)
		if v, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
			want = v
		}
		updated, total, avail := num("status", "updatedReplicas"), num("status", "replicas"), num("status", "availableReplicas")
		switch {
		case updated < want:
			return false, fmt.Sprintf("%d of %d new replicas updated", updated, want), nil
		case total > updated:
			return false, fmt.Sprintf("%d old replicas pending termination", total-updated), nil
		case avail < updated:
			return false, fmt.Sprintf("%d of %d updated replicas available", avail, updated), nil
		}
		return true, fmt.Sprintf("%d of %d replicas available", avail, want), nil
	case "StatefulSet":
		want := int64(1)
		if v, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
			want = v
		}
		ready, updated := num("status", "readyReplicas"), num("status", "updatedReplicas")
		cur, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision")
		upd, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision")
		switch {
		case ready < want:
			return false, fmt.Sprintf("%d of %d pods ready", ready, want), nil
		case updated < want && cur != upd:
			return false, fmt.Sprintf("%d of %d pods updated", updated, want), nil
		}
		return true, fmt.Sprintf("%d of %d pods ready", ready, want), nil
	case "DaemonSet":
		desired, updated, avail := num("status", "desiredNumberScheduled"), num("status", "updatedNumberScheduled"), num("status", "numberAvailable")
		switch {
		case updated < desired:
			return false, fmt.Sprintf("%d of %d pods updated", updated, desired), nil
		case avail < desired:
			return false, fmt.Sprintf("%d of %d updated pods available", avail, desired), nil
		}
		return true, fmt.Sprintf("%d of %d pods available", avail, desired), nil
	case "Job":
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Complete":
				return true, "complete", nil
			case "Failed":
				return false, "", fmt.Errorf("%w: job failed: %v", errRolloutFailed, m["message"])
			}
		}
		return false, fmt.Sprintf("%d pods succeeded", num("status", "succeeded")), nil
	}
	return true, "", nil
}

// waitSteady watches every workload (and Job, when jobs is set) until it reaches steady state,
// all at once. It fails on the first workload whose rollout failed, or, when the step timeout
// runs out, names each workload still waiting and what for.
func (s *stepRun) waitSteady(objs []*object, jobs bool) error {
	var targets []*object
	for _, o := range objs {
		if isWorkload(o.GetKind()) || (jobs && o.GetKind() == "Job") {
			targets = append(targets, o)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(s.steadyCtx)
	defer cancel()
	var mu sync.Mutex
	errs := make([]error, len(targets))
	last := make([]string, len(targets))
	var wg sync.WaitGroup
	for i, o := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.watchOne(ctx, o, func(msg string) {
				mu.Lock()
				defer mu.Unlock()
				if msg != last[i] {
					last[i] = msg
					s.logf("%s: %s", o.ID(), msg)
					s.progress(fmt.Sprintf("%s: %s", o.ID(), msg))
				}
			})
			if err != nil {
				errs[i] = err
				if errors.Is(err, errRolloutFailed) {
					cancel() // no point waiting for the others
				}
			}
		}()
	}
	wg.Wait()
	if s.ctx.Err() == context.Canceled {
		return s.ctx.Err()
	}
	for i, err := range errs {
		if errors.Is(err, errRolloutFailed) {
			return contract.Fail(contract.Unknown, "%s did not reach steady state: %v", targets[i].ID(), err)
		}
	}
	var waiting []string
	timedOut := s.steadyCtx.Err() != nil
	for i, err := range errs {
		if err != nil {
			if !timedOut {
				return classify(s.ctx, err, "watch %s", targets[i].ID())
			}
			waiting = append(waiting, fmt.Sprintf("%s (%s)", targets[i].ID(), last[i]))
		}
	}
	if len(waiting) > 0 {
		return contract.Fail(contract.Timeout, "steady state not reached within %s: %v", s.timeout, waiting)
	}
	s.logf("steady state: %d workloads in %s", len(targets), time.Since(start).Round(time.Millisecond))
	return nil
}

// watchOne watches one object (list then watch, re-listing if the watch drops) until its
// rollout is done.
func (s *stepRun) watchOne(ctx context.Context, o *object, progress func(string)) error {
	sel := fields.OneTermEqualSelector("metadata.name", o.GetName()).String()
	res := s.resource(o)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return res.Watch(ctx, opts)
		},
	}
	var failed error
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("%w: %s was deleted while waiting for it", errRolloutFailed, o.ID())
		}
		done, msg, err := rolloutState(u)
		if err != nil {
			failed = err
			return false, err
		}
		if msg != "" {
			progress(msg)
		}
		return done, nil
	})
	if failed != nil {
		return failed
	}
	return err
}
