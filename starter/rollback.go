package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
	"github.com/gantry-cd/gantry/workflows"
)

// ErrCannotRollBack says why a target cannot be rolled back after its deployment: nothing
// started.
var ErrCannotRollBack = errors.New("cannot roll back")

// rollbackTypes are the deployment types whose rollback steps undo an earlier execution's
// deployment: their release history (Kubernetes, NativeHelm) or the tags their rolling deploy
// leaves on the service or group (ECS, Asg) name the execution that deployed last.
var rollbackTypes = []string{"Kubernetes", "NativeHelm", "ECS", "Asg"}

// laterRollbackSteps are, for the types whose other strategies cannot be undone once they
// ended, the rollback steps that can: the rolling ones.
var laterRollbackSteps = map[string]struct{ prefix, step string }{
	"ECS": {"Ecs", stepspec.EcsRollingRollback},
	"Asg": {"Asg", stepspec.AsgRollingRollback},
}

// CanRollBack says whether deployments of a type can be rolled back after they ended.
func CanRollBack(deploymentType string) bool { return slices.Contains(rollbackTypes, deploymentType) }

// Rollback is a post-deployment rollback ready to start: the deployment it undoes, the one
// whose artifact runs again, and the execution's plan (the deploying stage alone).
type Rollback struct {
	Undo, Restore contract.DeploymentRecord
	Plan          *plan.Plan
	settings      workflows.Settings
}

// PlanRollback finds the one target the filter names and checks that its last successful
// deployment can be rolled back to the one before: a Kubernetes, NativeHelm, ECS or Asg
// stage with rollback steps, and an earlier success to restore. The plan is the deploying
// execution's, down to that stage, with its manifests and artifact pinned to what it deployed.
func (s *Starter) PlanRollback(ctx context.Context, f ledger.Filter) (*Rollback, error) {
	lv := ledger.Reader{Client: s.internal()}
	targets, err := lv.Targets(ctx, f)
	if err != nil {
		return nil, err
	}
	switch len(targets) {
	case 0:
		return nil, fmt.Errorf("%w: service %s has no deployment recorded in environment %s%s: %w", ErrCannotRollBack, f.Service, f.Environment, infraNote(f), ErrNotFound)
	case 1:
	default:
		var infras []string
		for _, t := range targets {
			infras = append(infras, t.Key.Infra)
		}
		return nil, fmt.Errorf("%w: service %s runs on %d infrastructures of environment %s (%s): name one with --infra", ErrCannotRollBack, f.Service, len(targets), f.Environment, strings.Join(infras, ", "))
	}
	st, err := lv.State(ctx, targets[0].Key)
	if err != nil {
		return nil, err
	}
	if st == nil || len(st.Successes) < 2 {
		return nil, fmt.Errorf("%w: service %s in environment %s has no earlier successful deployment to roll back to", ErrCannotRollBack, f.Service, f.Environment)
	}
	undo, restore := st.Successes[len(st.Successes)-1], st.Successes[len(st.Successes)-2]
	if !CanRollBack(undo.DeploymentType) {
		return nil, fmt.Errorf("%w: service %s was deployed to environment %s by a %s stage; Gantry rolls back %s deployments after they ended: rerun %s to deploy %s again",
			ErrCannotRollBack, f.Service, f.Environment, undo.DeploymentType, strings.Join(rollbackTypes, " and "), restore.Execution, version(restore))
	}
	in, err := s.Input(ctx, undo.Execution)
	if err != nil {
		return nil, fmt.Errorf("%w: read execution %s, which deployed %s: %w", ErrCannotRollBack, undo.Execution, version(undo), err)
	}
	var stage *plan.Node
	plan.Walk(in.Plan.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind == plan.KindStage && n.ID == undo.Stage {
			stage = n
		}
	})
	if stage == nil || len(stage.Rollback) == 0 {
		return nil, fmt.Errorf("%w: stage %s of pipeline %s, which deployed %s, has no rollback steps to run", ErrCannotRollBack, undo.Stage, undo.Pipeline, version(undo))
	}
	if only, ok := laterRollbackSteps[undo.DeploymentType]; ok {
		var refused []string
		plan.Walk(stage.Rollback, nil, func(n *plan.Node, _ []string) {
			if n.Kind == plan.KindStep && strings.HasPrefix(n.Type, only.prefix) && n.Type != only.step {
				refused = append(refused, n.Type)
			}
		})
		if len(refused) > 0 {
			return nil, fmt.Errorf("%w: stage %s of pipeline %s rolls back with %s; Gantry undoes %s deployments after they ended with %s alone: rerun %s to deploy %s again",
				ErrCannotRollBack, undo.Stage, undo.Pipeline, strings.Join(refused, ", "), undo.DeploymentType, only.step, restore.Execution, version(restore))
		}
	}
	p := *in.Plan
	p.Stages = []*plan.Node{stage}
	if res, err := s.Result(ctx, undo.Execution); err == nil && res.Tree != nil {
		pinCommits(&p, res.Tree)
	}
	return &Rollback{Undo: undo, Restore: restore, Plan: &p, settings: in.Settings}, nil
}

// StartRollback starts a post-deployment rollback: a new execution of the deploying stage's
// rollback steps, which restore the release before the undone one. Its resource constraint
// is the stage's, so it waits for a deployment running on the same infrastructure.
func (s *Starter) StartRollback(ctx context.Context, r *Rollback, trig workflows.Trigger) (Execution, error) {
	return s.start(ctx, r.Plan, trig, r.settings, workflows.PipelineInput{
		RollbackOf: &workflows.DeploymentRollback{Execution: r.Undo.Execution, Stage: r.Undo.Stage}}, "")
}

func version(d contract.DeploymentRecord) string {
	if d.Artifact != nil && d.Artifact.Version != "" {
		return "version " + d.Artifact.Version
	}
	return "its deployment"
}

func infraNote(f ledger.Filter) string {
	if f.Infra == "" {
		return ""
	}
	return ", infrastructure " + f.Infra
}
