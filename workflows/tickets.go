package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/stepspec"
	"github.com/gantry-cd/gantry/workflows/criteria"
)

// ticketing runs Jira, ServiceNow and custom approvals in TicketWait children.
type ticketing struct {
	*stageRun
	waits int // TicketWait children started, for their workflow IDs
}

// TicketWaitName is the workflow that waits on a ticket (JiraApproval, ServiceNowApproval) or a
// script (CustomApproval) for an approval step: it reads it every retry interval on a durable
// timer and decides the criteria. It is a child of the stage so that a wait of days, read every
// minute, continues as new instead of filling the stage's history.
const TicketWaitName = "gantry.TicketWait"

// SignalTicketView, with the step's path after a colon, carries a TicketWait's view of its wait
// to the stage when it changes.
const SignalTicketView = "gantry.ticketView"

func ticketViewSignal(path string) string { return SignalTicketView + ":" + path }

// DefaultRetryInterval is how often an approval reads its ticket when the step does not say.
const DefaultRetryInterval = time.Minute

// readsPerRun is how many reads a TicketWait makes before it continues as new.
const readsPerRun = 100

// TicketView describes a waiting ticket or custom approval in the tree, the pending list and
// the decision page: what it waits on, and which criteria are not met yet.
type TicketView struct {
	System    string `json:"system"` // Jira, ServiceNow or Custom
	Ticket    string `json:"ticket,omitempty"`
	URL       string `json:"url,omitempty"`
	Approval  string `json:"approval"`
	Rejection string `json:"rejection,omitempty"`
	// Unmet are the approval conditions not met at the last read that changed them (the stage
	// hears of changes only, so that a wait of days costs its history nothing per read).
	Unmet []string `json:"unmet,omitempty"`
	// Error is why the last read failed: the wait goes on, reading less often, until the
	// step's timeout.
	Error string `json:"error,omitempty"`
	// Window is the change window an approved ServiceNow ticket waits for.
	Window string `json:"window,omitempty"`
}

// TicketWaitInput is what a TicketWait reads and decides.
type TicketWaitInput struct {
	Stage     string                  `json:"stage"` // the stage workflow to signal
	Path      string                  `json:"path"`
	Ticket    *contract.TicketRequest `json:"ticket,omitempty"`
	Script    *contract.StepInput     `json:"script,omitempty"`
	Queue     string                  `json:"queue"`
	As        string                  `json:"as"` // what criteria call what is read: issue, ticket, output
	Approval  criteria.Criteria       `json:"approval"`
	Rejection *criteria.Criteria      `json:"rejection,omitempty"`
	Interval  time.Duration           `json:"interval"`
	Window    *ChangeWindow           `json:"window,omitempty"`
	View      TicketView              `json:"view"`
	Failures  int                     `json:"failures,omitempty"`
	// Local reads the ticket as a local activity of the wait's own worker (changeTicketLocalRead):
	// a read is then one workflow task and no activity task. Set when no delegate selectors
	// route the reads and the execution keeps the fast path on.
	Local bool `json:"local,omitempty"`
}

// ChangeWindow names the ticket fields that hold the window's start and end.
type ChangeWindow struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// TicketWaitResult is how a wait ended: APPROVED, REJECTED, or FAILED with the reason.
type TicketWaitResult struct {
	Result  string         `json:"result"`
	Message string         `json:"message,omitempty"`
	Read    map[string]any `json:"read,omitempty"`
	View    TicketView     `json:"view"`
}

// TicketWait reads and decides until the criteria are met (TicketWaitName).
func TicketWait(ctx workflow.Context, in TicketWaitInput) (TicketWaitResult, error) {
	view := in.View
	// Since changeTicketLocalRead: reads are local activities where they may be, and paced from
	// when each was due, so neither read latency nor a late workflow task adds up from one read
	// to the next: an approval is seen within one interval and the latency of one read.
	paced := in.Ticket != nil && workflow.GetVersion(ctx, changeTicketLocalRead, workflow.DefaultVersion, 1) == 1
	in.Local = in.Local && paced
	due := workflow.Now(ctx)
	signal := func() {
		// Best effort: the stage shows the newest view; a lost one is replaced by the next.
		_ = workflow.SignalExternalWorkflow(ctx, in.Stage, "", ticketViewSignal(in.Path), view).Get(ctx, nil)
	}
	for reads := 0; ; reads++ {
		if reads == readsPerRun {
			in.View = view
			return TicketWaitResult{}, workflow.NewContinueAsNewError(ctx, TicketWaitName, in)
		}
		read, failure, err := readOnce(ctx, in)
		if err != nil {
			return TicketWaitResult{}, err // cancelled
		}
		now := workflow.Now(ctx)
		if failure != nil {
			if !failure.Retryable {
				return TicketWaitResult{Result: "FAILED", Message: failure.Message, View: view}, nil
			}
			// Down or slow: keep waiting, reading less often, until the step's timeout.
			in.Failures++
			changed := view.Error != failure.Message
			view.Error = failure.Message
			if changed {
				signal()
			}
			if err := workflow.Sleep(ctx, backoff(in.Interval, in.Failures)); err != nil {
				return TicketWaitResult{}, err
			}
			due = workflow.Now(ctx)
			continue
		}
		in.Failures = 0
		if u, ok := read["url"].(string); ok && u != "" {
			view.URL = u
		}
		if in.Rejection != nil && !in.Rejection.Empty() {
			d, err := criteria.Evaluate(in.Rejection, in.As, read)
			if err != nil {
				return TicketWaitResult{Result: "FAILED", Message: "rejection criteria: " + err.Error(), View: view}, nil
			}
			if d.Met {
				return TicketWaitResult{Result: "REJECTED", Message: "the rejection criteria are met: " + in.Rejection.String(), Read: read, View: view}, nil
			}
		}
		d, err := criteria.Evaluate(&in.Approval, in.As, read)
		if err != nil {
			return TicketWaitResult{Result: "FAILED", Message: "approval criteria: " + err.Error(), View: view}, nil
		}
		if d.Met {
			if in.Window == nil {
				return TicketWaitResult{Result: "APPROVED", Read: read, View: view}, nil
			}
			start, end, err := in.Window.bounds(read)
			switch {
			case err != nil:
				return TicketWaitResult{Result: "FAILED", Message: err.Error(), View: view}, nil
			case now.After(end):
				return TicketWaitResult{Result: "FAILED", Message: fmt.Sprintf("approved, but its change window ended at %s UTC", end.Format(time.DateTime)), Read: read, View: view}, nil
			case now.Before(start):
				view.Window = fmt.Sprintf("approved; waits for its change window %s to %s UTC", start.Format(time.DateTime), end.Format(time.DateTime))
				view.Unmet, view.Error = nil, ""
				signal()
				if err := workflow.Sleep(ctx, start.Sub(now)); err != nil {
					return TicketWaitResult{}, err
				}
			}
			return TicketWaitResult{Result: "APPROVED", Read: read, View: view}, nil
		}
		if !slices.Equal(view.Unmet, d.Unmet) || view.Error != "" {
			view.Unmet, view.Error = d.Unmet, ""
			signal()
		}
		wait := in.Interval
		if paced {
			due = due.Add(in.Interval)
			now := workflow.Now(ctx)
			// A read that took most of an interval is followed by the next one a second later.
			due = maxTime(due, now.Add(time.Second))
			wait = due.Sub(now)
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return TicketWaitResult{}, err
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// readOnce reads the ticket or runs the script once. A failure is the step's to report (or,
// Retryable, an outage to wait out); err is a cancellation.
func readOnce(ctx workflow.Context, in TicketWaitInput) (map[string]any, *readFailure, error) {
	opts := workflow.ActivityOptions{
		TaskQueue:           in.Queue,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	}
	var err error
	var read map[string]any
	if in.Script != nil {
		opts.StartToCloseTimeout = in.Script.Timeout + time.Minute
		opts.Summary = in.Path + " (custom approval script)"
		var res contract.StepResult
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.ShellScript, *in.Script).Get(ctx, &res)
		vars, _ := res.Outputs["outputVariables"].(map[string]any)
		read = vars
	} else {
		opts.Summary = fmt.Sprintf("%s (read %s %s)", in.Path, in.Ticket.Connector.Type, in.Ticket.Key)
		var t contract.TicketState
		if in.Local {
			// A read is a GET: one that a crash makes run again costs a request, nothing more.
			lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
				StartToCloseTimeout: opts.StartToCloseTimeout, RetryPolicy: opts.RetryPolicy, Summary: opts.Summary})
			err = workflow.ExecuteLocalActivity(lctx, contract.TicketRead, *in.Ticket).Get(ctx, &t)
		} else {
			err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.TicketRead, *in.Ticket).Get(ctx, &t)
		}
		read = t.Fields
	}
	if err == nil {
		if read == nil {
			read = map[string]any{}
		}
		return read, nil, nil
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	f := contract.Classify(err)
	var app *temporal.ApplicationError
	retryable := !errors.As(err, &app) || !app.NonRetryable()
	if in.Script != nil {
		retryable = false // a script that fails fails the step, as a ShellScript's would
	}
	return nil, &readFailure{Failure: *f, Retryable: retryable}, nil
}

type readFailure struct {
	contract.Failure
	Retryable bool
}

// backoff is the interval after consecutive failed reads: doubled each time, at most ten
// minutes (or the interval, when longer).
func backoff(interval time.Duration, failures int) time.Duration {
	d := interval
	for range min(failures, 10) {
		d *= 2
	}
	return min(d, max(10*time.Minute, interval))
}

// bounds reads the change window from an approved ticket's fields (ServiceNow's UTC date and
// time values).
func (w *ChangeWindow) bounds(read map[string]any) (time.Time, time.Time, error) {
	parse := func(field string) (time.Time, error) {
		v := ""
		switch x := read[field].(type) {
		case map[string]any:
			v, _ = x["value"].(string)
		case string:
			v = x
		}
		if v == "" {
			return time.Time{}, fmt.Errorf("approved, but change window field %s is empty", field)
		}
		t, err := time.ParseInLocation(time.DateTime, v, time.UTC)
		if err != nil {
			return time.Time{}, fmt.Errorf("approved, but change window field %s holds %q, not a date and time", field, v)
		}
		return t, nil
	}
	start, err := parse(w.Start)
	if err != nil {
		return start, start, err
	}
	end, err := parse(w.End)
	return start, end, err
}

// ticketApprovalStep runs a JiraApproval, ServiceNowApproval or CustomApproval step: it starts
// the TicketWait that reads and decides, shows its view while the step is APPROVAL_WAITING,
// and ends the step as it ends (or at the step's timeout, or when aborted).
func (s *ticketing) ticketApprovalStep(ctx workflow.Context, n *plan.Node, t *Node, spec any, timeout time.Duration) (map[string]any, *contract.Failure) {
	in, err := s.ticketWaitInput(ctx, n, t, spec)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
	}
	s.waits++
	info := workflow.GetInfo(ctx)
	cctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:        fmt.Sprintf("%s/wait/%s/%d", info.WorkflowExecution.ID, t.Path, s.waits),
		TaskQueue:         info.TaskQueueName,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		StaticSummary:     fmt.Sprintf("%s waits on %s", t.Path, cmp.Or(in.View.Ticket, "its script")),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, TicketWaitName, in)

	view := in.View
	t.Status, t.Ticket = status.ApprovalWaiting, &view
	defer func() { t.Ticket = nil }()
	s.decisions.setWaiting(ctx, t.Path, status.ApprovalWaiting)
	defer s.decisions.setWaiting(ctx, t.Path, "")

	views := workflow.GetSignalChannel(ctx, ticketViewSignal(t.Path))
	timer := workflow.NewTimer(cctx, timeout)
	var res TicketWaitResult
	var childErr error
	done, expired := false, false
	for !done && !expired {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(fut, func(f workflow.Future) { done, childErr = true, f.Get(ctx, &res) })
		sel.AddReceive(views, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &view)
			t.Ticket = &view
			s.decisions.reportWaiting(ctx)
			s.publish(ctx)
		})
		sel.AddFuture(timer, func(f workflow.Future) { expired = f.Get(ctx, nil) == nil })
		sel.Select(ctx)
		if ctx.Err() != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted"}
		}
	}
	if expired {
		cancel()
		return nil, &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("no decision within %s: %s", timeout, waitingOn(view))}
	}
	if childErr != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "the wait on the ticket failed: " + childErr.Error()}
	}
	// A ticket approval's outputs are the ticket as last read; a custom approval's, its
	// script's output variables (<+execution.steps.S.output.outputVariables.NAME>).
	out := map[string]any{}
	if res.Read != nil {
		name := in.As
		if name == "output" {
			name = "outputVariables"
		}
		out[name] = res.Read
	}
	switch res.Result {
	case "APPROVED":
		s.notices.stepEvent(ctx, contract.EventPipelineResumed, t, status.Running)
		return out, nil
	case "REJECTED":
		return out, &contract.Failure{Category: contract.ApprovalRejection, Message: res.Message}
	}
	return out, &contract.Failure{Category: contract.Unknown, Message: res.Message}
}

// waitingOn says what a wait that timed out still waited for.
func waitingOn(v TicketView) string {
	switch {
	case v.Error != "":
		return "the last read failed: " + v.Error
	case len(v.Unmet) > 0:
		return "not met: " + strings.Join(v.Unmet, "; ")
	case v.Window != "":
		return v.Window
	}
	return "the criteria were not met"
}

// waitCriteria are what the three approvals that poll share: how often, and the criteria.
type waitCriteria struct {
	interval            stepspec.Text
	approval, rejection *stepspec.Criteria
}

// ticketWaitInput reads an approval step's rendered spec: a CustomApproval's, or a
// ServiceNowApproval's or JiraApproval's by its connector.
func (s *ticketing) ticketWaitInput(ctx workflow.Context, n *plan.Node, t *Node, spec any) (TicketWaitInput, error) {
	m, _ := spec.(map[string]any)
	in := TicketWaitInput{Stage: workflow.GetInfo(ctx).WorkflowExecution.ID, Path: t.Path, Queue: workflow.GetInfo(ctx).TaskQueueName}
	var wc waitCriteria
	var custom stepspec.CustomApprovalSpec
	var snow stepspec.ServiceNowApprovalSpec
	var jira stepspec.JiraApprovalSpec
	var err error
	switch {
	case traitsOf(n).Builtin == "customApproval":
		custom, err = specOf[stepspec.CustomApprovalSpec](spec)
		wc = waitCriteria{custom.RetryInterval, custom.ApprovalCriteria, custom.RejectionCriteria}
	case n.Refs != nil && n.Refs.Ticket != nil && n.Refs.Ticket.Type == "ServiceNow":
		snow, err = specOf[stepspec.ServiceNowApprovalSpec](spec)
		wc = waitCriteria{snow.RetryInterval, snow.ApprovalCriteria, snow.RejectionCriteria}
	default:
		jira, err = specOf[stepspec.JiraApprovalSpec](spec)
		wc = waitCriteria{jira.RetryInterval, jira.ApprovalCriteria, jira.RejectionCriteria}
	}
	if err != nil {
		return in, fmt.Errorf("spec: %v", err)
	}
	interval := DefaultRetryInterval
	if v := strings.TrimSpace(string(wc.interval)); v != "" {
		d, err := duration.ParseInterval(v)
		if err != nil {
			return in, fmt.Errorf("retryInterval %q: give a duration like 1m", v)
		}
		interval = d
	}
	in.Interval = max(interval, plan.MinRetryInterval)
	if in.Approval, err = readCriteria(wc.approval); err != nil {
		return in, fmt.Errorf("approvalCriteria: %v", err)
	}
	if wc.rejection != nil {
		r, err := readCriteria(wc.rejection)
		if err != nil {
			return in, fmt.Errorf("rejectionCriteria: %v", err)
		}
		in.Rejection = &r
	}
	in.View = TicketView{Approval: in.Approval.String()}
	if in.Rejection != nil && !in.Rejection.Empty() {
		in.View.Rejection = in.Rejection.String()
	}
	selectors := n.Selectors
	switch traitsOf(n).Builtin {
	case "customApproval":
		in.As, in.View.System = "output", "Custom"
		script, err := s.approvalScript(t, custom, m)
		if err != nil {
			return in, err
		}
		in.Script = script
	default:
		if n.Refs == nil || n.Refs.Ticket == nil {
			return in, fmt.Errorf("the step's connector was not resolved before the run")
		}
		conn := *n.Refs.Ticket
		in.Ticket = &contract.TicketRequest{Connector: conn}
		if len(selectors) == 0 {
			selectors = conn.Selectors
		}
		if conn.Type == "ServiceNow" {
			in.As = "ticket"
			in.Ticket.Key = strings.TrimSpace(string(snow.TicketNumber))
			in.Ticket.Table = strings.TrimSpace(string(snow.TicketType))
			if w := snow.ChangeWindow; w != nil {
				in.Window = &ChangeWindow{Start: string(w.StartField), End: string(w.EndField)}
			}
		} else {
			in.As = "issue"
			in.Ticket.Key = strings.TrimSpace(string(jira.IssueKey))
		}
		if in.Ticket.Key == "" || strings.Contains(in.Ticket.Key, "<+") {
			return in, fmt.Errorf("the ticket to wait on is %q: give its key or number", in.Ticket.Key)
		}
		in.View.System, in.View.Ticket = conn.Type, in.Ticket.Key
	}
	if len(selectors) > 0 {
		in.Queue = SelectorQueue(in.Queue, selectors)
	}
	in.Local = in.Ticket != nil && len(selectors) == 0 && !s.in.Settings.NoFastPath
	return in, nil
}

// approvalScript is a CustomApproval's script as a ShellScript activity runs it: the spec's
// script fields (m, the rendered spec) passed on as the ShellScript spec they are, on the worker.
func (s *ticketing) approvalScript(t *Node, sp stepspec.CustomApprovalSpec, m map[string]any) (*contract.StepInput, error) {
	timeout := 10 * time.Minute
	if v := strings.TrimSpace(string(sp.ScriptTimeout)); v != "" {
		d, err := duration.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("scriptTimeout %q: give a duration like 2m", v)
		}
		timeout = d
	}
	sh := map[string]any{"shell": m["shell"], "source": m["source"], "environmentVariables": m["environmentVariables"],
		"outputVariables": m["outputVariables"], "onDelegate": "true"}
	raw, err := json.Marshal(sh)
	if err != nil {
		return nil, err
	}
	return &contract.StepInput{ExecutionID: s.in.ExecutionID, StepPath: t.Path, Type: stepspec.ShellScript, Spec: raw, Timeout: timeout}, nil
}

// readCriteria reads rendered criteria.
func readCriteria(cr *stepspec.Criteria) (criteria.Criteria, error) {
	if cr == nil {
		cr = &stepspec.Criteria{}
	}
	spec := cr.Spec
	if spec == nil {
		spec = &stepspec.CriteriaSpec{}
	}
	c := criteria.Criteria{Type: string(cr.Type)}
	switch c.Type {
	case "Jexl":
		c.Expression = strings.TrimSpace(string(spec.Expression))
	case "KeyValues":
		c.MatchAny = strings.EqualFold(string(spec.MatchAnyCondition), "true")
		for _, cond := range spec.Conditions {
			c.Conditions = append(c.Conditions, criteria.Condition{Key: string(cond.Key), Operator: string(cond.Operator), Value: string(cond.Value)})
		}
	default:
		return c, fmt.Errorf("type %q: want Jexl or KeyValues", c.Type)
	}
	return c, nil
}
