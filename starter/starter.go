// Package starter is the client side of Gantry: it starts pipeline executions with readable
// IDs, search attributes and summaries, reads their live node tree, waits for them and lists
// them.
package starter

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Starter starts and reads executions through one Temporal client.
type Starter struct {
	Client client.Client
	// Internal is the client of the internal namespace (workflows.InternalNamespace), where
	// sequence workflows and cron schedules live; nil keeps them in Client's namespace.
	Internal  client.Client
	TaskQueue string // "" is workflows.TaskQueue
	// NoFastPath turns the fast path off for every execution this starter starts.
	NoFastPath bool
	// Resend bounds the re-sending of decisions the server dropped without deciding them.
	Resend UpdateRetry
	// Log receives a line for each decision sent again; nil logs nothing.
	Log *zap.Logger
	// Converter is Client's data converter (the codec's, with payload encryption), for the
	// payloads read from histories; nil is the default one.
	Converter converter.DataConverter

	resent    atomic.Int64
	sequences sync.Map // pipeline identifier -> *numbers: this process's sequence numbers
	adopted   sync.Map // pipeline identifier -> true: its sequence workflow is in the internal namespace
}

func (s *Starter) queue() string {
	if s.TaskQueue == "" {
		return workflows.TaskQueue
	}
	return s.TaskQueue
}

// Execution identifies a started pipeline execution.
type Execution struct {
	ID         string // workflow ID: <pipeline identifier>-<sequence>
	RunID      string
	SequenceID int64
}

// Start starts a pipeline execution of a compiled plan.
func (s *Starter) Start(ctx context.Context, p *plan.Plan, trig workflows.Trigger, set workflows.Settings) (Execution, error) {
	return s.start(ctx, p, trig, set, workflows.PipelineInput{}, "")
}

// StartOnce starts at most one execution per key, however often and however concurrently it
// is called, across restarts: every call gets the key's sequence number and so its workflow
// ID. Started is false for a repeat. Once in a while (a repeat that reaches another gantry
// process during a burst, see nextSequence) a repeat starts an execution that finds its key
// taken and ends SKIPPED before anything runs.
func (s *Starter) StartOnce(ctx context.Context, key string, p *plan.Plan, trig workflows.Trigger, set workflows.Settings) (Execution, bool, error) {
	exec, err := s.start(ctx, p, trig, set, workflows.PipelineInput{}, key)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return exec, false, nil
	}
	return exec, err == nil, err
}

// start starts an execution of p; with's Resume and RollbackOf make it a retry or a
// post-deployment rollback.
func (s *Starter) start(ctx context.Context, p *plan.Plan, trig workflows.Trigger, set workflows.Settings, with workflows.PipelineInput, key string) (Execution, error) {
	if trig.Type == "" {
		trig.Type = "MANUAL"
	}
	set.NoFastPath = set.NoFastPath || s.NoFastPath
	if err := fitsInput(workflows.PipelineInput{Plan: p, Trigger: trig, Settings: set, Resume: with.Resume, RollbackOf: with.RollbackOf}); err != nil {
		return Execution{}, fmt.Errorf("start pipeline %s: %w", p.Identifier, err)
	}
	seq, bound, err := s.nextSequence(ctx, p.Identifier, key)
	if err != nil {
		return Execution{}, err
	}
	in := workflows.PipelineInput{Plan: p, SequenceID: seq, Trigger: trig, Settings: set, Resume: with.Resume, RollbackOf: with.RollbackOf}
	if !bound {
		in.Key = key // taken ahead: the execution records its key
	}
	id := fmt.Sprintf("%s-%d", p.Identifier, seq)
	var user []temporal.SearchAttributeUpdate
	if trig.User != "" {
		user = append(user, workflows.AttrUser.ValueSet(trig.User))
	}
	run, err := s.Client.ExecuteWorkflow(ctx, StartOptions(p, id, s.queue(), seq, trig.Type, user...), workflows.PipelineName, in)
	if err != nil {
		return Execution{ID: id, SequenceID: seq}, fmt.Errorf("start pipeline %s: %w", p.Identifier, err)
	}
	return Execution{ID: id, RunID: run.GetRunID(), SequenceID: seq}, nil
}

// ErrTooLarge says an execution's input cannot be a Temporal payload: nothing started.
var ErrTooLarge = errors.New("too large to run")

// InputLimit is the most bytes an execution's input may take: Temporal refuses payloads over
// 2 MiB (its default blob size limit), and the codec's envelope needs a little room.
const InputLimit = 2<<20 - 16<<10

// fitsInput refuses an input Temporal would refuse, before a number is taken for it.
func fitsInput(in workflows.PipelineInput) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode the execution's input: %w", err)
	}
	if len(b) > InputLimit {
		return fmt.Errorf("%w: the compiled pipeline, its trigger and inputs take %d bytes, over the %d-byte limit of one Temporal payload; split it into chained pipelines (a Pipeline stage) or move large values to files", ErrTooLarge, len(b), InputLimit)
	}
	return nil
}

// StartOptions are the options an execution of p starts with: its ID, search attributes (extra
// ones added) and the summary and details the Temporal UI shows.
func StartOptions(p *plan.Plan, id, taskQueue string, seq int64, trigger string, extra ...temporal.SearchAttributeUpdate) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                taskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(append([]temporal.SearchAttributeUpdate{
			workflows.AttrPipeline.ValueSet(p.Identifier),
			workflows.AttrStatus.ValueSet(string(status.Running)),
			workflows.AttrTrigger.ValueSet(trigger),
		}, extra...)...),
		StaticSummary: fmt.Sprintf("Pipeline %s #%d", p.Name, seq),
		StaticDetails: details(p),
	}
}

// detailStages is the most stages the static details list: they stay small for any pipeline.
const detailStages = 100

// details is the execution's static details in the Temporal UI (markdown).
func details(p *plan.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pipeline `%s` from `%s`.\n\nStages:\n", p.Identifier, p.File)
	listed, more := 0, 0
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		switch {
		case n.Kind != plan.KindStage:
		case listed < detailStages:
			fmt.Fprintf(&b, "- `%s` (%s)\n", n.ID, n.Type)
			listed++
		default:
			more++
		}
	})
	if more > 0 {
		fmt.Fprintf(&b, "- and %d more\n", more)
	}
	return b.String()
}

// Tree returns an execution's node tree: the final one for a closed execution, the live one
// (with running stages' own trees spliced in) otherwise.
func (s *Starter) Tree(ctx context.Context, executionID string) (*workflows.Node, error) {
	desc, err := s.Client.DescribeWorkflowExecution(ctx, executionID, "")
	if err != nil {
		return nil, notFound(executionID, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		res, err := s.Result(ctx, executionID)
		if err != nil {
			return nil, err
		}
		return res.Tree, s.Complete(ctx, executionID, res.Tree)
	}
	var tree *workflows.Node
	if err := query(ctx, s.Client, executionID, &tree); err != nil {
		return nil, err
	}
	// Stage loops run in batches first: their running iterations are stages to read too.
	if err := s.Complete(ctx, executionID, tree); err != nil {
		return nil, err
	}
	tree.Walk(func(n *workflows.Node) {
		if n.Kind != "stage" || n.Status.Final() || n.Status == status.NotStarted {
			return
		}
		id := executionID + "/" + n.ID
		if strings.HasPrefix(n.Path, "pipelineRollback.") {
			id = executionID + "/pipelineRollback/" + n.ID
		}
		var st *workflows.Node
		// A stage child that has not started yet or just closed has nothing better to show.
		if query(ctx, s.Client, id, &st) == nil && st != nil {
			*n = *st
		}
	})
	if err := s.Complete(ctx, executionID, tree); err != nil {
		return nil, err
	}
	liveStatus(tree)
	s.queuePlace(ctx, executionID, tree)
	return tree, nil
}

// Complete replaces the placeholders of big loops' batches and long pipelines' segments
// (Node.Source) by the nodes their workflows ran (from the result of a closed one, the live
// tree of a running one), so callers always see every node.
func (s *Starter) Complete(ctx context.Context, executionID string, tree *workflows.Node) error {
	return s.expand(ctx, tree, nil)
}

// expand is Complete that also gathers the stage data of closed segments into stages (nil:
// not wanted).
func (s *Starter) expand(ctx context.Context, tree *workflows.Node, stages map[string]any) error {
	var err error
	tree.Walk(func(n *workflows.Node) {
		if err != nil || !hasBatches(n) {
			return
		}
		var kids []*workflows.Node
		for _, c := range n.Children {
			if c.Source == "" {
				kids = append(kids, c)
				continue
			}
			var part *workflows.StageResult
			if part, err = s.batchResult(ctx, c.Source); err != nil {
				return
			}
			if part == nil || part.Tree == nil { // not started yet
				kids = append(kids, c)
				continue
			}
			kids = append(kids, part.Tree.Children...)
			if c.Kind == "segment" && stages != nil {
				for id, d := range part.Data {
					stages[id] = d
				}
			}
		}
		n.Children = kids
	})
	return err
}

func hasBatches(n *workflows.Node) bool {
	for _, c := range n.Children {
		if c.Source != "" {
			return true
		}
	}
	return false
}

// batchResult returns a batch or segment workflow's result once closed, else its live tree.
func (s *Starter) batchResult(ctx context.Context, id string) (*workflows.StageResult, error) {
	desc, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, err
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		var t *workflows.Node
		err := query(ctx, s.Client, id, &t)
		return &workflows.StageResult{Tree: t}, err
	}
	var res workflows.StageResult
	if err := workflows.ResultFrom(s.Client.GetWorkflow(ctx, id, "").Get(ctx, &res), &res); err != nil {
		return nil, fmt.Errorf("batch %s: %w", id, err)
	}
	return &res, nil
}

// liveStatus sets each running container's status to the live roll-up of its children (spec
// 3.3 over all children), so a node waiting deep inside shows on its stage and pipeline.
func liveStatus(n *workflows.Node) status.Status {
	if len(n.Children) == 0 || n.Status.Final() || n.Status == status.NotStarted {
		return n.Status
	}
	var live []status.Status
	for _, c := range n.Children {
		if st := liveStatus(c); st != status.NotStarted {
			live = append(live, st)
		}
	}
	if st := status.Rollup(live); !st.Final() {
		n.Status = st
	}
	return n.Status
}

func query(ctx context.Context, c client.Client, id string, out **workflows.Node) error {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryTree)
	if err != nil {
		return fmt.Errorf("query execution %s: %w", id, err)
	}
	return v.Get(out)
}

// Result waits for an execution to close and returns its result, the stages its segments ran
// included (a long pipeline's result holds placeholders). A workflow that failed, was
// terminated or timed out as a whole returns an error.
func (s *Starter) Result(ctx context.Context, executionID string) (*workflows.PipelineResult, error) {
	var res workflows.PipelineResult
	if err := workflows.ResultFrom(s.Client.GetWorkflow(ctx, executionID, "").Get(ctx, &res), &res); err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			return &workflows.PipelineResult{Status: status.Aborted}, nil
		}
		var terminated *temporal.TerminatedError
		var timedOut *temporal.TimeoutError
		if errors.As(err, &terminated) || errors.As(err, &timedOut) {
			return s.endedByTemporal(ctx, executionID), nil
		}
		return nil, fmt.Errorf("execution %s: %w", executionID, err)
	}
	if res.Tree != nil && hasSegments(res.Tree) {
		if res.Stages == nil {
			res.Stages = map[string]any{}
		}
		if err := s.expand(ctx, res.Tree, res.Stages); err != nil {
			return nil, fmt.Errorf("execution %s: %w", executionID, err)
		}
	}
	return &res, nil
}

func hasSegments(tree *workflows.Node) bool {
	found := false
	tree.Walk(func(n *workflows.Node) { found = found || (n.Kind == "segment" && n.Source != "") })
	return found
}

// Summary is one execution in a listing.
type Summary struct {
	ID       string    `json:"executionId"`
	Pipeline string    `json:"pipeline"`
	Status   string    `json:"status"`
	Trigger  string    `json:"trigger"`
	User     string    `json:"user,omitempty"` // who started it by hand
	Start    time.Time `json:"startedAt"`
	End      time.Time `json:"endedAt,omitzero"`
	// Reason says why Temporal, not the pipeline, ended the execution ("" when it finished).
	Reason string `json:"reason,omitempty"`
}

// List returns recent pipeline executions, newest first. pipeline filters by identifier.
func (s *Starter) List(ctx context.Context, pipeline string, limit int) ([]Summary, error) {
	return s.ListWhere(ctx, pipeline, limit, nil)
}

// ListWhere is List of the executions keep keeps (nil keeps all).
func (s *Starter) ListWhere(ctx context.Context, pipeline string, limit int, keep func(Summary) bool) ([]Summary, error) {
	var out []Summary
	token := ""
	for len(out) < limit {
		page, err := s.ListPage(ctx, ListFilter{Pipeline: pipeline}, limit, token)
		if err != nil {
			return nil, err
		}
		for _, sm := range page.Executions {
			if keep == nil || keep(sm) {
				out = append(out, sm)
			}
		}
		if token = page.Next; token == "" {
			break
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ListFilter narrows a listing of executions; "" matches any.
type ListFilter struct {
	Pipeline string
	// Status is a Gantry status (RUNNING: still running, whatever Temporal says of it).
	Status string
	// User started the executions by hand.
	User string
}

// ExecutionsPage is one page of a listing, newest first, and the token of the next ("" at the
// end).
type ExecutionsPage struct {
	Executions []Summary
	Next       string
}

// ListPage reads one page of at most limit pipeline executions from visibility, from token
// (a page's Next; "" for the first).
func (s *Starter) ListPage(ctx context.Context, f ListFilter, limit int, token string) (ExecutionsPage, error) {
	next, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return ExecutionsPage{}, fmt.Errorf("list executions: bad page token: %w", err)
	}
	resp, err := listVisibility(ctx, s.Client, &workflowservice.ListWorkflowExecutionsRequest{Query: listQuery(f), PageSize: int32(limit), NextPageToken: next})
	if err != nil {
		return ExecutionsPage{}, fmt.Errorf("list executions: %w", err)
	}
	page := ExecutionsPage{Next: base64.RawURLEncoding.EncodeToString(resp.GetNextPageToken())}
	for _, e := range resp.GetExecutions() {
		page.Executions = append(page.Executions, summaryOf(e))
	}
	return page, nil
}

// listQuery is the visibility query of f's pipeline executions.
func listQuery(f ListFilter) string {
	clean := func(v string) string { return strings.ReplaceAll(v, "'", "") }
	q := fmt.Sprintf("WorkflowType = '%s'", workflows.PipelineName)
	if f.Pipeline != "" {
		q += fmt.Sprintf(" AND %s = '%s'", workflows.AttrPipeline.GetName(), clean(f.Pipeline))
	}
	switch f.Status {
	case "":
	case string(status.Running): // one Temporal terminated says RUNNING to the end
		q += " AND ExecutionStatus = 'Running'"
	default:
		q += fmt.Sprintf(" AND %s = '%s'", workflows.AttrStatus.GetName(), clean(f.Status))
	}
	if f.User != "" {
		q += fmt.Sprintf(" AND %s = '%s'", workflows.AttrUser.GetName(), clean(f.User))
	}
	return q
}

// summaryOf is an execution as visibility lists it.
func summaryOf(e *workflowpb.WorkflowExecutionInfo) Summary {
	sa := e.GetSearchAttributes().GetIndexedFields()
	str := func(k string) string {
		if p, ok := sa[k]; ok {
			return strings.Trim(string(p.GetData()), `"`)
		}
		return ""
	}
	sm := Summary{
		ID: e.GetExecution().GetWorkflowId(), Pipeline: str(workflows.AttrPipeline.GetName()),
		Status: str(workflows.AttrStatus.GetName()), Trigger: str(workflows.AttrTrigger.GetName()),
		User: str(workflows.AttrUser.GetName()), Start: e.GetStartTime().AsTime(),
	}
	if e.GetCloseTime() != nil {
		sm.End = e.GetCloseTime().AsTime()
	}
	sm.Status, sm.Reason = listStatus(e.GetStatus(), status.Status(sm.Status))
	return sm
}

// listStatus is an execution's status in Gantry's words: the one the pipeline recorded when it
// finished, or, for a run Temporal ended before it could (terminated, timed out), ERRORED with
// the reason.
func listStatus(temporalStatus enumspb.WorkflowExecutionStatus, recorded status.Status) (string, string) {
	switch temporalStatus {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return string(recorded), ""
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return string(status.Errored), "terminated by Temporal"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return string(status.Errored), "timed out in Temporal"
	}
	if recorded.Final() {
		return string(recorded), ""
	}
	if temporalStatus == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		return string(status.Aborted), "cancelled in Temporal"
	}
	return string(status.Errored), "the pipeline workflow " + strings.ToLower(strings.TrimPrefix(temporalStatus.String(), "WorkflowExecutionStatus"))
}

// ErrNotFound is wrapped by errors about executions that do not exist (or stopped running).
var ErrNotFound = errors.New("not found")

func notFound(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("execution %s %w (list executions with `gantry list`)", id, ErrNotFound)
	}
	return fmt.Errorf("execution %s: %w", id, err)
}

// Refused is a decision a workflow's validator refused; Kind is one of workflows.Err*.
type Refused struct {
	Kind    string
	Message string
}

func (r *Refused) Error() string { return r.Message }

// Abort asks an execution to stop through the abort update: running steps are cancelled and
// their processes killed, nothing else starts, and the tree records who aborted.
func (s *Starter) Abort(ctx context.Context, executionID, user, reason string) error {
	if err := s.update(ctx, executionID, workflows.UpdateAbort, workflows.AbortRequest{User: user, Reason: reason}, nil); err != nil {
		return updateErr(executionID, err)
	}
	return nil
}

// Pause pauses a running execution (pause true) or resumes a paused one: running steps
// finish, and nothing new starts until it resumes (spec 3.4).
func (s *Starter) Pause(ctx context.Context, executionID, user string, pause bool) (string, error) {
	name := workflows.UpdateResume
	if pause {
		name = workflows.UpdatePause
	}
	var msg string
	if err := s.update(ctx, executionID, name, workflows.PauseRequest{User: user}, &msg); err != nil {
		return "", updateErr(executionID, err)
	}
	return msg, nil
}

// Intervene sends a user's decision on a node to the stage workflow that owns it. Invalid
// requests are rejected by the workflow's validator with the reason.
func (s *Starter) Intervene(ctx context.Context, executionID string, req workflows.InterventionRequest) (string, error) {
	return s.decide(ctx, executionID, req.Path, workflows.UpdateIntervene, req)
}

// decisionErr is updateErr for a decision on a node: a refusal names the node.
func decisionErr(id, path string, err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return fmt.Errorf("%s: %w", path, unwrapApp(err))
	}
	return updateErr(id, err)
}

func updateErr(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%s is not running (finished, or no such execution or stage): %w", id, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", id, unwrapApp(err))
}

// unwrapApp turns a validator's refusal into a *Refused without the SDK's wrapping.
func unwrapApp(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return &Refused{Kind: app.Type(), Message: app.Message()}
	}
	return err
}

// Input returns the input an execution was started with (its plan, trigger and settings).
func (s *Starter) Input(ctx context.Context, executionID string) (*workflows.PipelineInput, error) {
	iter := s.Client.GetWorkflowHistory(ctx, executionID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return nil, fmt.Errorf("execution %s has no history", executionID)
	}
	ev, err := iter.Next()
	if err != nil {
		return nil, notFound(executionID, err)
	}
	attrs := ev.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil || attrs.GetWorkflowType().GetName() != workflows.PipelineName {
		return nil, fmt.Errorf("%s is not a pipeline execution", executionID)
	}
	var in workflows.PipelineInput
	if err := s.converter().FromPayloads(attrs.GetInput(), &in); err != nil {
		return nil, fmt.Errorf("read the input of %s: %w", executionID, err)
	}
	return &in, nil
}

// Rerun starts a fresh execution of the same plan and inputs as an earlier one. Manifests
// stored in Git are fetched at the commits the earlier execution deployed, not at their
// branches' heads.
func (s *Starter) Rerun(ctx context.Context, executionID string, trig workflows.Trigger) (Execution, error) {
	in, err := s.Input(ctx, executionID)
	if err != nil {
		return Execution{}, err
	}
	if res, err := s.Result(ctx, executionID); err == nil && res.Tree != nil {
		pinCommits(in.Plan, res.Tree)
	}
	return s.start(ctx, in.Plan, trig, in.Settings, workflows.PipelineInput{}, "")
}

// pinCommits sets each Git store of a stage to the commit an earlier run of the stage
// fetched (stage nodes' Manifests), and its artifact to the digest it resolved (Artifact). An iteration of a multi-service stage records its own;
// the stage's deployments take the first recorded for a manifest.
func pinCommits(p *plan.Plan, tree *workflows.Node) {
	fetched := map[string]map[string]string{} // stage ID → manifest → commit
	digests := map[string]string{}            // stage ID → artifact digest
	tree.Walk(func(n *workflows.Node) {
		if n.Kind != "stage" || (len(n.Manifests) == 0 && n.Artifact == "") {
			return
		}
		// An iteration's node has an ID of its own; its path starts with the stage's.
		for _, stage := range []string{n.ID, strings.SplitN(n.Path, ".", 2)[0]} {
			if _, ok := digests[stage]; !ok && n.Artifact != "" {
				digests[stage] = n.Artifact
			}
			if fetched[stage] == nil {
				fetched[stage] = map[string]string{}
			}
			for m, c := range n.Manifests {
				if _, ok := fetched[stage][m]; !ok {
					fetched[stage][m] = c
				}
			}
		}
	})
	plan.Walk(p.Stages, nil, func(n *plan.Node, _ []string) {
		commits, digest := fetched[n.ID], digests[n.ID]
		if n.Kind != plan.KindStage || (commits == nil && digest == "") {
			return
		}
		n.Deploy = n.Deploy.Pinned(commits, digest)
		for k, d := range n.Deploys {
			n.Deploys[k] = d.Pinned(commits, digest)
		}
	})
}

// Retry starts a new execution of a failed one that skips the stages before fromStage and
// carries their statuses and outputs forward (spec 14). fromStage "" picks the first stage
// that did not succeed.
func (s *Starter) Retry(ctx context.Context, executionID, fromStage string, trig workflows.Trigger) (Execution, error) {
	in, err := s.Input(ctx, executionID)
	if err != nil {
		return Execution{}, err
	}
	res, err := s.Result(ctx, executionID)
	if err != nil {
		return Execution{}, err
	}
	switch res.Status {
	case status.Failed, status.Aborted, status.Expired, status.ApprovalRejected, status.FreezeFailed, status.Errored:
	default:
		return Execution{}, fmt.Errorf("execution %s ended %s; only failed, aborted or expired executions can be retried (use rerun)", executionID, res.Status)
	}
	if res.Tree == nil {
		return Execution{}, fmt.Errorf("execution %s has no recorded stages to resume from", executionID)
	}
	var order []string
	plan.Walk(in.Plan.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind == plan.KindStage {
			order = append(order, n.ID)
		}
	})
	if fromStage == "" {
		for _, id := range order {
			if n := res.Tree.Find(id); n == nil || !n.Status.Positive() {
				fromStage = id
				break
			}
		}
	}
	known := false
	for _, id := range order {
		known = known || id == fromStage
	}
	if !known {
		return Execution{}, fmt.Errorf("pipeline %s has no stage %q; stages: %s", in.Plan.Identifier, fromStage, strings.Join(order, ", "))
	}
	root := executionID
	if in.Resume != nil {
		root = in.Resume.RootExecutionID
	}
	resume := &workflows.Resume{RootExecutionID: root, FromStage: fromStage, Stages: map[string]workflows.StageCopy{}}
	for _, id := range order {
		n := res.Tree.Find(id)
		d, _ := res.Stages[id].(map[string]any)
		if n != nil {
			resume.Stages[id] = workflows.StageCopy{Tree: n, Data: d}
		}
	}
	if b, _ := json.Marshal(resume); len(b) > InputLimit/2 {
		// A long pipeline's copies keep their outcome and data, not every step below them.
		for id, c := range resume.Stages {
			shallow := *c.Tree
			shallow.Children = nil
			c.Tree = &shallow
			resume.Stages[id] = c
		}
	}
	return s.start(ctx, in.Plan, trig, in.Settings, workflows.PipelineInput{Resume: resume}, "")
}

// Approve sends an approver's vote to the stage that owns the approval step. The workflow's
// validator refuses votes from outside the approver groups, second votes, the executor when
// that is disallowed, and undeclared or invalid inputs.
func (s *Starter) Approve(ctx context.Context, executionID string, req workflows.ApprovalRequest) (string, error) {
	return s.decide(ctx, executionID, req.Path, workflows.UpdateApprove, req)
}

// Pending is a node waiting for users: an approval or an intervention.
type Pending struct {
	ExecutionID string                  `json:"executionId"`
	Pipeline    string                  `json:"pipeline"`
	Path        string                  `json:"path"`
	Status      status.Status           `json:"status"`
	Approval    *workflows.ApprovalView `json:"approval,omitempty"`
	Ticket      *workflows.TicketView   `json:"ticket,omitempty"`
	Actions     []string                `json:"actions,omitempty"`
	Inputs      []string                `json:"inputs,omitempty"`
}

// PendingPage is one page of the decisions running executions wait for.
type PendingPage struct {
	Pending []Pending `json:"pending"`
	// NextPageToken asks for the next page; "" on the last one.
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// PendingQuery finds, in visibility, the running executions whose status says they wait for a
// user (the pipeline workflow keeps GantryStatus at its strongest waiting status).
var PendingQuery = fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s IN ('%s', '%s', '%s')",
	workflows.PipelineName, workflows.AttrStatus.GetName(), status.ApprovalWaiting, status.InterventionWaiting, status.InputWaiting)

// ErrPageToken says a page token was not one a listing gave.
var ErrPageToken = errors.New("the page token is not one this server gave")

// pendingTreeReads bounds the trees a page reads at once.
const pendingTreeReads = 8

// PendingPage lists the approvals, interventions and execution-time inputs of up to limit
// waiting executions, from token (a previous page's NextPageToken; "" for the first): the
// executions and their waiting steps come from visibility, newest first (the pipeline keeps
// its waiting steps in its memo); executions started before it did have their trees read, a
// few at a time.
func (s *Starter) PendingPage(ctx context.Context, limit int, token string) (PendingPage, error) {
	if limit <= 0 {
		limit = 100
	}
	next, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return PendingPage{}, fmt.Errorf("%w: %q", ErrPageToken, token)
	}
	resp, err := listVisibility(ctx, s.Client, &workflowservice.ListWorkflowExecutionsRequest{Query: PendingQuery, PageSize: int32(limit), NextPageToken: next})
	if err != nil {
		if strings.Contains(err.Error(), "token") && token != "" {
			return PendingPage{}, fmt.Errorf("%w: %v", ErrPageToken, err)
		}
		return PendingPage{}, fmt.Errorf("list waiting executions: %w", err)
	}
	execs := resp.GetExecutions()
	found := make([][]Pending, len(execs))
	sem := make(chan struct{}, pendingTreeReads)
	var wg sync.WaitGroup
	for i, e := range execs {
		id := e.GetExecution().GetWorkflowId()
		pipeline := ""
		if p, ok := e.GetSearchAttributes().GetIndexedFields()[workflows.AttrPipeline.GetName()]; ok {
			pipeline = strings.Trim(string(p.GetData()), `"`)
		}
		add := func(path string, st status.Status, approval *workflows.ApprovalView, ticket *workflows.TicketView, actions, inputs []string) {
			found[i] = append(found[i], Pending{ExecutionID: id, Pipeline: pipeline, Path: path, Status: st,
				Approval: approval, Ticket: ticket, Actions: actions, Inputs: inputs})
		}
		if m, ok := e.GetMemo().GetFields()[workflows.MemoWaiting]; ok {
			var nodes []workflows.WaitingNode
			if converter.GetDefaultDataConverter().FromPayload(m, &nodes) == nil {
				for _, n := range nodes {
					if decidedByPeople(n.Status) { // not a step waiting for a lock
						add(n.Path, n.Status, n.Approval, n.Ticket, n.Actions, n.Inputs)
					}
				}
				continue
			}
		}
		// Started before pipelines kept their waiting steps in the memo: read the tree.
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tree, err := s.Tree(ctx, id)
			if err != nil {
				return // finished meanwhile
			}
			tree.Walk(func(n *workflows.Node) {
				if decidedByPeople(n.Status) && n.Kind == "step" {
					add(n.Path, n.Status, n.Approval, n.Ticket, n.Actions, n.Inputs)
				}
			})
		}()
	}
	wg.Wait()
	page := PendingPage{Pending: []Pending{}, NextPageToken: base64.RawURLEncoding.EncodeToString(resp.GetNextPageToken())}
	for _, f := range found {
		page.Pending = append(page.Pending, f...)
	}
	return page, nil
}

// Pending lists every decision running executions wait for, page after page.
func (s *Starter) Pending(ctx context.Context) ([]Pending, error) {
	return AllPending(ctx, 500, s.PendingPage)
}

// AllPending collects every page of a pending listing, size executions a page.
func AllPending(ctx context.Context, size int, list func(ctx context.Context, limit int, token string) (PendingPage, error)) ([]Pending, error) {
	var out []Pending
	token := ""
	for {
		page, err := list(ctx, size, token)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Pending...)
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}

// SupplyInputs answers a step's execution-time inputs; invalid values are refused with the
// reason.
func (s *Starter) SupplyInputs(ctx context.Context, executionID string, req workflows.InputRequest) (string, error) {
	return s.decide(ctx, executionID, req.Path, workflows.UpdateInput, req)
}

// listVisibility lists executions from visibility. A call that ran past the SDK's 10 s limit
// (visibility on a busy SQLite server) is asked again, up to three times in all, while the
// caller's own context still has time, rather than failing the listing.
func listVisibility(ctx context.Context, c client.Client, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	resp, err := c.ListWorkflow(ctx, req)
	var slow *serviceerror.DeadlineExceeded
	for tries := 1; (errors.As(err, &slow) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil && tries < 3; tries++ {
		resp, err = c.ListWorkflow(ctx, req)
	}
	return resp, err
}

// decidedByPeople reports whether a waiting status waits for a person's decision.
func decidedByPeople(st status.Status) bool {
	return st == status.ApprovalWaiting || st == status.InterventionWaiting || st == status.InputWaiting
}
