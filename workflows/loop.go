package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// runLoop runs a looped step or step group (spec 6.5): the strategy node t gets one child per
// iteration, started in index order with at most maxConcurrency running at once.
func (s *stageRun) runLoop(ctx workflow.Context, n *plan.Node, t *Node, prefix string, container map[string]any, fr *frame) {
	root := s.rootFor(fr)
	fqn := prefix + "." + n.ID
	now := workflow.Now(ctx)
	t.Kind, t.Status, t.StartedAt = "strategy", status.Running, &now
	lp, skip, failure := resolveLoop(n, root, fqn)
	switch {
	case failure != nil:
		s.end(ctx, t, status.Failed, failure)
		return
	case skip:
		s.end(ctx, t, status.Skipped, nil)
		return
	}
	parent := strings.TrimSuffix(strings.TrimSuffix(t.Path, n.ID), ".")
	if len(lp.iterations) > s.in.Settings.batchSize() {
		s.runBatches(ctx, n, t, lp, prefix, parent, container, root)
		s.end(ctx, t, loopStatus(t.Children), nil)
		return
	}
	children := make([]*plan.Node, len(lp.iterations))
	t.Children = make([]*Node, len(lp.iterations))
	for i, it := range lp.iterations {
		c := iterationNode(n, it)
		path := join(parent, c.ID)
		children[i] = c
		t.Children[i] = &Node{Path: path, ID: c.ID, Name: c.Name, Kind: string(c.Kind), Type: c.Type, Status: status.NotStarted, Template: c.Template, Children: childTree(c, path)}
		s.loopPaths[path] = true
	}
	total := len(lp.iterations)
	runIterations(ctx, lp, t.Children,
		func(ctx workflow.Context) bool { return s.stopped(ctx, fr) },
		func(i int) { s.end(ctx, t.Children[i], status.Skipped, nil) },
		func(ctx workflow.Context, i int) {
			ifr := &frame{parent: fr, root: withInstance(iterationRoot(root, n.ID, lp.iterations[i], total), lp.iterations[i])}
			s.runNode(ctx, children[i], t.Children[i], prefix, container, ifr)
		})
	s.end(ctx, t, loopStatus(t.Children), nil)
}

// resolveLoop evaluates strategy.when and expands the strategy. skip means strategy.when was
// false; a failure means the strategy could not be resolved or has no iterations.
func resolveLoop(n *plan.Node, root map[string]any, fqn string) (*loopPlan, bool, *contract.Failure) {
	if n.Strategy.When != "" {
		ok, err := evalWhen(root, fqn, n.Strategy.When)
		if err != nil {
			return nil, false, &contract.Failure{Category: contract.Unknown, Message: "strategy.when: " + err.Error()}
		}
		if !ok {
			return nil, true, nil
		}
	}
	lp, err := expand(n.Strategy, expressions.NewScope(root, fqn))
	if err != nil {
		return nil, false, &contract.Failure{Category: contract.Unknown, Message: "strategy: " + err.Error()}
	}
	if len(lp.iterations) == 0 {
		return nil, false, &contract.Failure{Category: contract.Unknown, Message: "Total number of iterations found to be 0"}
	}
	return lp, false, nil
}

// iterationNode is a copy of a looped node for one iteration, renamed per spec 6.6.
func iterationNode(n *plan.Node, it iteration) *plan.Node {
	c := *n
	c.Strategy, c.Postfix = nil, it.Postfix
	c.ID, c.Name = n.ID+it.Postfix, n.Name+it.Postfix
	if n.Deploys != nil {
		// One iteration of a multi-deployment stage deploys its own combination (spec 21.2).
		c.Deploy, c.Deploys = n.Deploys[plan.DeployKey(it.Matrix)], nil
	}
	return &c
}

// runIterations starts run(i) for each iteration in index order, keeping at most the loop's
// concurrency running, until stopped; with SkipQueued a broke iteration makes the ones not
// started yet skip(i).
func runIterations(ctx workflow.Context, lp *loopPlan, nodes []*Node, stopped func(workflow.Context) bool, skip func(int), run func(workflow.Context, int)) {
	// "All at once" still starts at most MaxRunningSteps: thousands of coroutines waiting in
	// one workflow task would exceed the SDK's deadlock detector.
	limit := lp.concurrency
	if limit == 0 || limit > MaxRunningSteps {
		limit = MaxRunningSteps
	}
	if limit > 1 && len(lp.iterations) > 1 {
		ctx = concurrently(ctx)
	}
	running, failed := 0, false
	wg := workflow.NewWaitGroup(ctx)
	for i := range lp.iterations {
		if err := workflow.Await(ctx, func() bool { return running < limit }); err != nil {
			break
		}
		if stopped(ctx) {
			break
		}
		if lp.skipQueued && failed {
			skip(i)
			continue
		}
		running++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			run(ctx, i)
			running--
			if nodes[i].Status.Broke() {
				failed = true
			}
			wg.Done() // not deferred: see runStep
		})
	}
	wg.Wait(ctx)
}

// loopStatus rolls up iterations; a strategy node whose children all skipped is SKIPPED
// (spec 3.3).
func loopStatus(children []*Node) status.Status {
	all := len(children) > 0
	for _, c := range children {
		if c.Status != status.Skipped {
			all = false
		}
	}
	if all {
		return status.Skipped
	}
	return rollupChildren(children)
}
