package deployed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/gantry-cd/gantry/contract"
)

// sweepReads bounds the targets one sweep reads at once, and sweepChunk how many it reads
// between heartbeats.
const (
	sweepReads = 8
	sweepChunk = 64
)

// readFor bounds one target's read within a sweep; sweepBeat spaces the sweep's heartbeats,
// which go on while reads hang, so that only a lost worker misses them.
const (
	readFor   = 2 * time.Minute
	sweepBeat = 5 * time.Second
)

// sweepItem is one target a sync keeps, as its memo says.
type sweepItem struct {
	id     string
	target contract.InstanceTarget
	last   *contract.InstanceSnapshot
}

// SweepInstances reads every target whose sync runs on its queue and signals each sync whose reading
// differs from its last (contract.InstanceReading.Differs): a target that stays as it is costs
// its workflow nothing. The targets are read in the order of their workflow IDs; a retried
// sweep goes on from its last heartbeat.
func (a *Activity) SweepInstances(ctx context.Context) (contract.SweepResult, error) {
	var res contract.SweepResult
	if a.Records == nil {
		return res, nil
	}
	var items []sweepItem
	err := contract.EachRunning(ctx, a.Records.Client, contract.InstancesName, a.Records.TaskQueue, func(e *workflowpb.WorkflowExecutionInfo) error {
		it, memo := sweepItem{id: e.GetExecution().GetWorkflowId()}, e.GetMemo().GetFields()
		if ok, err := contract.MemoValue(memo, contract.MemoInstancesTarget, &it.target); err != nil || !ok {
			return err // not read yet: its own first read comes
		}
		var last contract.InstanceSnapshot
		if ok, err := contract.MemoValue(memo, contract.MemoInstances, &last); err != nil {
			return err
		} else if ok {
			it.last = &last
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("list the targets whose instances are read: %w", err)
	}
	slices.SortFunc(items, func(a, b sweepItem) int { return strings.Compare(a.id, b.id) })
	res.Targets = len(items)
	done := 0
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &done)
	}
	var progress atomic.Int64 // the targets before it are read and signalled
	progress.Store(int64(done))
	beat, stop := time.NewTicker(sweepBeat), make(chan struct{})
	defer func() { beat.Stop(); close(stop) }()
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-beat.C:
				activity.RecordHeartbeat(ctx, int(progress.Load()))
			}
		}
	}()
	var mu sync.Mutex
	for done < len(items) {
		chunk := items[done:min(done+sweepChunk, len(items))]
		var wg sync.WaitGroup
		sem := make(chan struct{}, sweepReads)
		for _, it := range chunk {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				r := a.sweepRead(ctx, it.target)
				if !r.Differs(it.last) {
					return
				}
				err := a.Records.Client.SignalWorkflow(ctx, it.id, "", contract.SignalInstancesReading, r)
				var nf *serviceerror.NotFound
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.As(err, &nf): // ended meanwhile
				case err != nil && r.Error == "":
					res.Failed++ // not delivered: its sync keeps the reading before
				default:
					res.Changed++
					if r.Read.Gone != "" {
						res.Gone++
					}
				}
				if r.Error != "" {
					res.Failed++
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		done += len(chunk)
		progress.Store(int64(done))
	}
	return res, nil
}

// sweepRead reads one target, its failure said in the reading.
func (a *Activity) sweepRead(ctx context.Context, t contract.InstanceTarget) contract.InstanceReading {
	rctx, cancel := context.WithTimeout(ctx, readFor)
	defer cancel()
	r, err := a.ReadInstances(rctx, t)
	out := contract.InstanceReading{Read: r, At: time.Now().UTC()}
	if err != nil {
		out.Read, out.Error = contract.InstanceRead{}, contract.Classify(err).Message
	}
	return out
}

// ensureSweep starts the sweep the first time, and tells it a new interval when the worker's
// differs from the one it runs with.
func (a *Activity) ensureSweep(ctx context.Context) error {
	every := a.InstanceSync
	if every <= 0 {
		every = contract.DefaultInstanceSync
	}
	c := a.Records.Client
	id := contract.SweepID(a.Records.TaskQueue)
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return err
	}
	if err == nil && desc.GetWorkflowExecutionInfo().GetCloseTime() == nil {
		var st contract.InstanceSweepState
		if ok, err := contract.MemoValue(desc.GetWorkflowExecutionInfo().GetMemo().GetFields(), contract.MemoSweep, &st); err != nil || !ok || st.Every == every {
			return err // running with this interval (or writing its first memo)
		}
	}
	_, err = c.SignalWithStartWorkflow(ctx, id, contract.SignalSweepEvery, every,
		client.StartWorkflowOptions{ID: id, TaskQueue: a.Records.TaskQueue}, contract.SweepName, contract.InstanceSweepState{Every: every})
	return err
}
