package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

func notifyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "notify", Short: "Check a pipeline's notification channels"}
	cmd.AddCommand(notifyTestCmd())
	return cmd
}

func notifyTestCmd() *cobra.Command {
	var conn connFlags
	var opts load.Options
	var event string
	cmd := &cobra.Command{
		Use:   "test PIPELINE.yaml --event TYPE",
		Short: "Send a sample notification of an event to every target of each rule that selects it",
		Long: `Loads the pipeline, builds a sample event of --event (PipelineFailed, StageStart, StepFailed,
WaitingForUserAction, ...) and sends it, once, through every target of each enabled rule that selects
that event, with the same channel configuration a worker uses (--smtp-*, --pagerduty-url,
--notify-identity for user groups, secrets from GANTRY_SECRET_<ID>, the secrets file or the secret
manager). Stage and step events use the first stage or step the rule names. Nothing runs and
nothing is recorded. Exit code 1 when a send failed, with the reason.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(contract.EventTypes[1:], event) {
				return usageErr("--event must be one of %s", strings.Join(contract.EventTypes[1:], ", "))
			}
			opts.ForRun = true
			r, err := load.File(args[0], opts)
			if err != nil {
				return usageErr("%v", err)
			}
			if !r.OK() {
				report(cmd.ErrOrStderr(), args[0], r)
				return &exitError{code: ExitInvalid, err: errors.New("the pipeline does not load")}
			}
			ctx := cmd.Context()
			store, err := conn.secretStore(ctx)
			if err != nil {
				return usageErr("%v", err)
			}
			sender := conn.notify.sender(conn.dataDir, store, func() string { return "" })
			deliveries := sampleDeliveries(r.Plan, event)
			if len(deliveries) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no enabled notification rule of %s selects %s\n", args[0], event)
				return nil
			}
			failed := 0
			for _, d := range deliveries {
				sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				res, err := sender.Send(sctx, d)
				cancel()
				if err != nil {
					failed++
					fmt.Fprintf(cmd.OutOrStdout(), "rule %s, %s: FAILED: %v\n", d.Rule, d.Describe(), err)
					continue
				}
				what := "delivered"
				if res.Code != 0 {
					what += fmt.Sprintf(" (%d)", res.Code)
				}
				if res.Detail != "" {
					what += ": " + res.Detail
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rule %s, %s: %s\n", d.Rule, d.Describe(), what)
			}
			if failed > 0 {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("%d of %d notifications failed", failed, len(deliveries))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&event, "event", "", "event type to send a sample of, e.g. PipelineFailed (required)")
	_ = cmd.MarkFlagRequired("event")
	cmd.Flags().StringArrayVar(&opts.InputSets, "input-set", nil, "input set or overlay file to merge (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Sets, "set", nil, "runtime input FQN=VALUE (repeatable)")
	templatesFlag(cmd, &opts.TemplateDirs)
	conn.add(cmd)
	return cmd
}

// sampleDeliveries are the deliveries of a sample event of one type for each rule that could
// select it, their targets rendered against the pipeline's variables.
func sampleDeliveries(p *plan.Plan, typ string) []contract.Delivery {
	vars := map[string]any{}
	pdata := map[string]any{"identifier": p.Identifier, "name": p.Name, "executionId": "notify-test", "sequenceId": 0,
		"variables": vars, "stages": map[string]any{}, "triggerType": "MANUAL"}
	root := map[string]any{"pipeline": pdata}
	for _, v := range p.Variables {
		if s, err := expressions.RenderString(v.Value, expressions.NewScope(root, "pipeline"), expressions.Options{}); err == nil {
			vars[v.Name] = s
		} else {
			vars[v.Name] = v.Value
		}
	}
	var out []contract.Delivery
	for _, rule := range p.Notifications {
		ev := sampleEvent(p, rule, typ)
		if !contract.Matches(rule, ev) {
			continue
		}
		fqn := "pipeline"
		if ev.Stage != "" {
			fqn = "pipeline.stages." + ev.Stage
		}
		out = append(out, workflows.NotifyDeliveries([]plan.NotificationRule{rule}, ev, root, fqn)...)
	}
	return out
}

// sampleEvent is an event of typ as rule would see it: on the first stage or step it names.
func sampleEvent(p *plan.Plan, rule plan.NotificationRule, typ string) contract.NotifyEvent {
	end := time.Now().UTC().Truncate(time.Second)
	ev := contract.NotifyEvent{Type: typ, ExecutionID: "notify-test-" + end.Format("20060102T150405"), Pipeline: p.Identifier,
		PipelineName: p.Name, Org: p.Org, Project: p.Project, Node: "pipeline", Start: end.Add(-time.Minute), End: &end,
		TriggerType: "MANUAL", TriggeredBy: "gantry notify test", Mode: "NORMAL"}
	stage, step := "", ""
	for _, e := range rule.Events {
		if e.Type != typ {
			continue
		}
		for _, s := range e.Stages {
			if s != "AllStages" && stage == "" {
				stage = s
			}
		}
		for _, s := range e.Steps {
			if s != "AllSteps" && step == "" {
				step = s
			}
		}
	}
	firstStage, firstStep := "", ""
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if n.Kind == plan.KindStage && firstStage == "" {
			firstStage = n.ID
		}
		if n.Kind == plan.KindStep && firstStep == "" {
			firstStep = strings.Join(path, ".")
		}
	})
	if step != "" {
		stage, _, _ = strings.Cut(step, ".")
	}
	if stage == "" {
		stage = firstStage
	}
	if step == "" {
		step = firstStep
	}
	sample := "sample failure sent by gantry notify test: no pipeline ran"
	switch contract.EventLevel(typ) {
	case "stage":
		ev.Node, ev.Stage, ev.StageName, ev.StageBase = stage, stage, stage, stage
	case "step":
		st, _, _ := strings.Cut(step, ".")
		id := step[strings.LastIndexByte(step, '.')+1:]
		ev.Node, ev.Stage, ev.StageName, ev.StageBase = step, st, st, st
		ev.Step, ev.StepName, ev.StepPath = id, id, step
	case "trigger":
		ev.ExecutionID, ev.TriggerID, ev.TriggerName, ev.TriggerType = "", "sample_trigger", "sample trigger", "Webhook"
		ev.Error = sample
	}
	switch typ {
	case contract.EventPipelineStart, contract.EventStageStart, contract.EventPipelineResumed:
		ev.Status, ev.End = status.Running, nil
	case contract.EventWaitingForUserAction:
		ev.Status, ev.End = status.ApprovalWaiting, nil
		ev.Action = "gantry approve " + ev.ExecutionID + " --step " + step
	case contract.EventPipelinePaused:
		ev.Status = status.Paused
	case contract.EventPipelineSuccess, contract.EventStageSuccess, contract.EventPipelineEnd:
		ev.Status = status.Succeeded
	default:
		ev.Status, ev.Category, ev.Error = status.Failed, "Unknown", sample
	}
	return ev
}
