// Package ledger reads the deployments ledger back from Temporal: every target's summary
// (what runs where), a target's or a service's deployments, and the DORA figures computed
// from the days the targets keep. The Deployment stages write it (workflows.Ledger).
package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
)

// View is what the commands and the pages read: the targets a filter keeps, their newest
// deployments, and their DORA figures. A Reader reads Temporal; the CLI's API client reads a
// server.
type View interface {
	Targets(ctx context.Context, f Filter) ([]contract.LedgerSummary, error)
	Deployments(ctx context.Context, f Filter, limit int) ([]contract.DeploymentRecord, error)
	DORA(ctx context.Context, f Filter, from, to time.Time) (DORA, error)
	// Instances reads the last instance reading of each target the filter keeps that is
	// read, every instance listed.
	Instances(ctx context.Context, f Filter) ([]contract.InstanceSnapshot, error)
}

// Reader reads the ledger through the internal namespace's client.
type Reader struct {
	Client client.Client
}

var _ View = Reader{}

// Targets lists the targets the filter keeps.
func (r Reader) Targets(ctx context.Context, f Filter) ([]contract.LedgerSummary, error) {
	all, err := r.all(ctx)
	if err != nil {
		return nil, err
	}
	return f.Keep(all), nil
}

// Deployments lists the newest deployments of the targets the filter keeps, newest first.
func (r Reader) Deployments(ctx context.Context, f Filter, limit int) ([]contract.DeploymentRecord, error) {
	states, err := r.kept(ctx, f)
	if err != nil {
		return nil, err
	}
	return Deployments(states, limit), nil
}

// DORA computes the DORA figures of the targets the filter keeps over [from, to).
func (r Reader) DORA(ctx context.Context, f Filter, from, to time.Time) (DORA, error) {
	states, err := r.kept(ctx, f)
	if err != nil {
		return DORA{}, err
	}
	return ComputeDORA(states, from, to), nil
}

func (r Reader) kept(ctx context.Context, f Filter) ([]contract.LedgerState, error) {
	targets, err := r.Targets(ctx, f)
	if err != nil {
		return nil, err
	}
	return r.States(ctx, targets)
}

// reads bounds the targets' ledgers queried at once.
const reads = 8

// all lists every target's summary from visibility (the ledger workflows' memos), by service,
// environment and infrastructure, each with its last instance reading.
func (r Reader) all(ctx context.Context) ([]contract.LedgerSummary, error) {
	out, err := listMemos[contract.LedgerSummary](ctx, r.Client, contract.LedgerName, contract.MemoLedger)
	if err != nil {
		return nil, fmt.Errorf("list the deployments ledger's targets: %w", err)
	}
	read, err := r.Readings(ctx)
	if err != nil {
		return nil, err
	}
	byKey := make(map[contract.DeploymentKey]*contract.InstanceSnapshot, len(read))
	for i := range read {
		byKey[read[i].Key] = &read[i]
	}
	for i := range out {
		out[i].Instances = byKey[out[i].Key]
	}
	slices.SortFunc(out, func(a, b contract.LedgerSummary) int { return compareKeys(a.Key, b.Key) })
	return out, nil
}

// Readings lists every read target's last reading, without its instance list, from
// visibility (the sync workflows' memos), each dated by its queue's last sweep when that
// found it unchanged.
func (r Reader) Readings(ctx context.Context) ([]contract.InstanceSnapshot, error) {
	sweeps := map[string]*contract.SweepResult{}
	err := contract.EachRunning(ctx, r.Client, contract.SweepName, "", func(e *workflowpb.WorkflowExecutionInfo) error {
		var st contract.InstanceSweepState
		if _, err := contract.MemoValue(e.GetMemo().GetFields(), contract.MemoSweep, &st); err != nil {
			return fmt.Errorf("read the memo of %s: %w", e.GetExecution().GetWorkflowId(), err)
		}
		sweeps[e.GetTaskQueue()] = st.Last
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the instance sweeps: %w", err)
	}
	var out []contract.InstanceSnapshot
	err = contract.EachRunning(ctx, r.Client, contract.InstancesName, "", func(e *workflowpb.WorkflowExecutionInfo) error {
		var s contract.InstanceSnapshot
		if ok, err := contract.MemoValue(e.GetMemo().GetFields(), contract.MemoInstances, &s); err != nil {
			return fmt.Errorf("read the memo of %s: %w", e.GetExecution().GetWorkflowId(), err)
		} else if ok {
			confirmed(&s, sweeps[e.GetTaskQueue()])
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the targets' instances: %w", err)
	}
	return out, nil
}

// confirmed dates a reading the last sweep found unchanged: a target that existed when the
// sweep started and was not signalled was read as it is before the sweep ended.
func confirmed(s *contract.InstanceSnapshot, last *contract.SweepResult) {
	if last != nil && s.Error == "" && !s.SyncedAt.IsZero() && s.SyncedAt.Before(last.Started) {
		s.SyncedAt = last.Ended
	}
}

// listMemos reads the memo key of every running workflow of a type from visibility.
func listMemos[T any](ctx context.Context, c client.Client, workflowType, key string) ([]T, error) {
	var out []T
	err := contract.EachRunning(ctx, c, workflowType, "", func(e *workflowpb.WorkflowExecutionInfo) error {
		var v T
		ok, err := contract.MemoValue(e.GetMemo().GetFields(), key, &v)
		if err != nil {
			return fmt.Errorf("read the memo of %s: %w", e.GetExecution().GetWorkflowId(), err)
		}
		if ok {
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

func compareKeys(a, b contract.DeploymentKey) int {
	return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Environment, b.Environment),
		cmp.Compare(a.Infra, b.Infra), cmp.Compare(a.Project, b.Project))
}

// Instances reads the full last reading of each target the filter keeps that is read.
func (r Reader) Instances(ctx context.Context, f Filter) ([]contract.InstanceSnapshot, error) {
	targets, err := r.Targets(ctx, f)
	if err != nil {
		return nil, err
	}
	targets = slices.DeleteFunc(targets, func(t contract.LedgerSummary) bool { return t.Instances == nil })
	return eachTarget(targets, func(t contract.LedgerSummary) (contract.InstanceSnapshot, error) {
		s, err := r.snapshot(ctx, t)
		if s.Error == "" && t.Instances.SyncedAt.After(s.SyncedAt) {
			s.SyncedAt = t.Instances.SyncedAt // as its sweep dated it
		}
		return s, err
	})
}

// eachTarget calls read for every target, at most reads at once, and returns the answers in
// the targets' order.
func eachTarget[T any](targets []contract.LedgerSummary, read func(contract.LedgerSummary) (T, error)) ([]T, error) {
	out := make([]T, len(targets))
	errs := make([]error, len(targets))
	sem := make(chan struct{}, reads)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = read(t)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// snapshot queries a target's full reading; the memo's when the sync ended a moment ago.
func (r Reader) snapshot(ctx context.Context, t contract.LedgerSummary) (contract.InstanceSnapshot, error) {
	k := t.Key
	v, err := r.Client.QueryWorkflow(ctx, contract.InstancesID(k), "", contract.QueryInstances)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return *t.Instances, nil
	}
	var s *contract.InstanceSnapshot
	if err == nil {
		err = v.Get(&s)
	}
	if err != nil {
		return contract.InstanceSnapshot{}, fmt.Errorf("read the instances of service %s in environment %s, infrastructure %s: %w", k.Service, k.Environment, k.Infra, err)
	}
	if s == nil {
		return *t.Instances, nil
	}
	return *s, nil
}

// State reads one target's ledger; nil when the target has none.
func (r Reader) State(ctx context.Context, k contract.DeploymentKey) (*contract.LedgerState, error) {
	v, err := r.Client.QueryWorkflow(ctx, contract.LedgerID(k), "", contract.QueryLedger)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the ledger of service %s in environment %s, infrastructure %s: %w", k.Service, k.Environment, k.Infra, err)
	}
	var st contract.LedgerState
	if err := v.Get(&st); err != nil {
		return nil, fmt.Errorf("read the ledger of service %s in environment %s, infrastructure %s: %w", k.Service, k.Environment, k.Infra, err)
	}
	return &st, nil
}

// States reads the targets' ledgers, in their order.
func (r Reader) States(ctx context.Context, targets []contract.LedgerSummary) ([]contract.LedgerState, error) {
	return eachTarget(targets, func(t contract.LedgerSummary) (contract.LedgerState, error) {
		st, err := r.State(ctx, t.Key)
		if st == nil {
			return contract.LedgerState{}, err
		}
		return *st, err
	})
}

// Filter selects targets: by service, environment, infrastructure and environment type
// (Production, PreProduction); empty fields match any.
type Filter struct {
	Service, Environment, Infra, EnvironmentType string
}

// Keep returns the targets the filter keeps.
func (f Filter) Keep(targets []contract.LedgerSummary) []contract.LedgerSummary {
	var out []contract.LedgerSummary
	for _, t := range targets {
		if match(f.Service, t.Key.Service) && match(f.Environment, t.Key.Environment) && match(f.Infra, t.Key.Infra) &&
			match(f.EnvironmentType, t.EnvironmentType) {
			out = append(out, t)
		}
	}
	return out
}

func match(want, got string) bool { return want == "" || want == got }

// Deployments merges the targets' newest deployments, newest first, at most limit (0: all
// the ledgers keep).
func Deployments(states []contract.LedgerState, limit int) []contract.DeploymentRecord {
	var out []contract.DeploymentRecord
	for _, st := range states {
		out = append(out, st.Recent...)
	}
	slices.SortStableFunc(out, func(a, b contract.DeploymentRecord) int { return b.Ended.Compare(a.Ended) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// InstancesText says a target's instances in a few words: "3 (2 ready)", with ", drift" when
// what runs is not what Gantry deployed and ", read failed" when the last read did; "-" when
// they are not read.
func InstancesText(s *contract.InstanceSnapshot) string {
	if s == nil {
		return "-"
	}
	out := "?"
	if !s.SyncedAt.IsZero() {
		out = fmt.Sprintf("%d (%d ready)", s.Count, s.Ready)
	}
	if len(s.Drift) > 0 {
		out += ", drift"
	}
	if s.Error != "" {
		out += ", read failed"
	}
	return out
}
