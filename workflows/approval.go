package workflows

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/stepspec"
)

// UpdateApprove records an approver's vote on a waiting HarnessApproval step (ApprovalRequest);
// sent to the stage workflow that owns the step.
const UpdateApprove = "approve"

// ApprovalRequest is one approver's decision. User and Groups come from the authenticated
// identity (HTTP API or CLI token), never from the request body.
type ApprovalRequest struct {
	Path     string            `json:"path"`
	Action   string            `json:"action"` // APPROVE or REJECT
	User     string            `json:"user"`
	Email    string            `json:"email,omitempty"`
	Groups   []string          `json:"groups"`
	Comments string            `json:"comments,omitempty"`
	Inputs   map[string]string `json:"inputs,omitempty"`
}

// ApprovalActivity is one recorded vote (spec 8.3).
type ApprovalActivity struct {
	User           map[string]any `json:"user"` // name, email
	Action         string         `json:"action"`
	Comments       string         `json:"comments"`
	ApprovedAt     int64          `json:"approvedAt"`
	ApproverInputs []any          `json:"approverInputs"` // [{name, value}]
}

// ApprovalView describes a waiting approval in the node tree.
type ApprovalView struct {
	Message      string   `json:"message"`
	UserGroups   []string `json:"userGroups"`
	MinimumCount int      `json:"minimumCount"`
	Approvals    int      `json:"approvals"`
	Inputs       []string `json:"inputs,omitempty"`
}

// approvalInput is a declared approver input.
type approvalInput struct {
	Name, Default, Regex string
	Allowed              []string
	Many                 []string // selectManyFrom: a comma-separated selection of these
}

// approval is a waiting approval instance.
type approval struct {
	groups           []string
	minimum          int
	disallowExecutor bool
	executor         string
	inputs           []approvalInput
	activities       []map[string]any
	voters           map[string]bool
	result           string // APPROVED or REJECTED
	view             *ApprovalView
}

// approvalStep waits for approvers (spec 8.2): APPROVAL_WAITING until minimumCount distinct
// users approved, someone rejected, or the step timed out.
func (s *decisions) approvalStep(ctx workflow.Context, t *Node, spec any, timeout time.Duration, root map[string]any) (map[string]any, *contract.Failure) {
	m, _ := spec.(map[string]any)
	a, err := newApproval(m, root)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
	}
	s.approvals[t.Path] = a
	defer delete(s.approvals, t.Path)
	t.Status, t.Approval = status.ApprovalWaiting, a.view
	defer func() { t.Approval = nil }()
	s.setWaiting(ctx, t.Path, status.ApprovalWaiting)
	defer s.setWaiting(ctx, t.Path, "")
	done, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return a.result != "" })
	switch {
	case err != nil:
		return nil, &contract.Failure{Category: aborted, Message: "aborted"}
	case !done:
		return nil, &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("no decision within %s", timeout)}
	}
	if a.result == "APPROVED" {
		s.notices.stepEvent(ctx, contract.EventPipelineResumed, t, status.Running)
	}
	out := map[string]any{"approvalActivities": anyList(a.activities), "approverInputs": a.lastInputs()}
	child(s.root, "approval")["approvalActivities"] = out["approvalActivities"]
	if a.result == "REJECTED" {
		last := a.activities[len(a.activities)-1]
		return out, &contract.Failure{Category: contract.ApprovalRejection,
			Message: fmt.Sprintf("rejected by %v", last["user"].(map[string]any)["name"])}
	}
	return out, nil
}

func newApproval(m map[string]any, root map[string]any) (*approval, error) {
	sp, err := specOf[stepspec.HarnessApprovalSpec](m)
	if err != nil {
		return nil, fmt.Errorf("HarnessApproval spec: %v", err)
	}
	appr := sp.Approvers
	if appr == nil {
		appr = &stepspec.Approvers{}
	}
	a := &approval{voters: map[string]bool{}, groups: appr.UserGroups}
	if len(a.groups) == 0 {
		return nil, fmt.Errorf("approvers.userGroups is empty: nobody could approve")
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(appr.MinimumCount)))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("approvers.minimumCount must be a whole number of at least 1, got %q", appr.MinimumCount)
	}
	a.minimum = n
	a.disallowExecutor = strings.EqualFold(string(appr.DisallowPipelineExecutor), "true")
	if p, ok := root["pipeline"].(map[string]any); ok {
		if tb, ok := p["triggeredBy"].(map[string]any); ok {
			a.executor = expressions.ToString(tb["name"])
		}
	}
	for _, im := range sp.ApproverInputs {
		a.inputs = append(a.inputs, approvalInput{Name: string(im.Name), Default: string(im.DefaultValue), Regex: string(im.Regex),
			Allowed: append(slices.Clone(im.AllowedValues), im.SelectOneFrom...), Many: im.SelectManyFrom})
	}
	a.view = &ApprovalView{Message: string(sp.ApprovalMessage), UserGroups: a.groups, MinimumCount: a.minimum}
	for _, in := range a.inputs {
		a.view.Inputs = append(a.view.Inputs, in.Name)
	}
	return a, nil
}

// validate is the update validator: an invalid vote is refused and leaves no trace.
func (a *approval) validate(req ApprovalRequest) error {
	if req.Action != "APPROVE" && req.Action != "REJECT" {
		return refuse(ErrInvalid, "action must be APPROVE or REJECT, got %q", req.Action)
	}
	if req.User == "" {
		return refuse(ErrForbidden, "the request carries no authenticated user")
	}
	// Groups match by identifier: `org._organization_all_users` names _organization_all_users.
	if !slices.ContainsFunc(req.Groups, func(g string) bool {
		return slices.ContainsFunc(a.groups, func(want string) bool { return plan.LocalRef(want) == plan.LocalRef(g) })
	}) {
		return refuse(ErrForbidden, "%s is not in any approver group (%s)", req.User, strings.Join(a.groups, ", "))
	}
	if a.voters[req.User] {
		return refuse(ErrConflict, "%s has already voted on this approval", req.User)
	}
	if a.disallowExecutor && req.User == a.executor {
		return refuse(ErrForbidden, "Pipeline executor is not allowed to approve/reject")
	}
	for name := range req.Inputs {
		if !slices.ContainsFunc(a.inputs, func(in approvalInput) bool { return in.Name == name }) {
			return refuse(ErrInvalid, "approver input %q is not declared by this approval", name)
		}
	}
	if req.Action == "APPROVE" {
		for _, in := range a.inputs {
			v, ok := req.Inputs[in.Name]
			if !ok {
				continue
			}
			if len(in.Allowed) > 0 && !slices.Contains(in.Allowed, v) {
				return refuse(ErrInvalid, "approver input %s: %q is not one of %s", in.Name, v, strings.Join(in.Allowed, ", "))
			}
			for _, x := range strings.Split(v, ",") {
				if len(in.Many) > 0 && !slices.Contains(in.Many, strings.TrimSpace(x)) {
					return refuse(ErrInvalid, "approver input %s: %q is not one of %s (select one or more, comma-separated)", in.Name, strings.TrimSpace(x), strings.Join(in.Many, ", "))
				}
			}
			if in.Regex != "" {
				re, err := regexp.Compile(in.Regex)
				if err == nil && !re.MatchString(v) {
					return refuse(ErrInvalid, "approver input %s: %q does not match %s", in.Name, v, in.Regex)
				}
			}
		}
	}
	return nil
}

// record adds a vote and decides the approval when it can.
func (a *approval) record(req ApprovalRequest, at time.Time) {
	a.voters[req.User] = true
	var inputs []any
	for _, in := range a.inputs {
		v, ok := req.Inputs[in.Name]
		if !ok {
			v = in.Default
			if prev := a.lastInputs(); prev != nil {
				if pv, ok := prev[in.Name].(string); ok {
					v = pv // each approver sees the previous approver's values
				}
			}
		}
		inputs = append(inputs, map[string]any{"name": in.Name, "value": v})
	}
	a.activities = append(a.activities, map[string]any{
		"user": map[string]any{"name": req.User, "email": req.Email}, "action": req.Action,
		"comments": req.Comments, "approvedAt": at.UnixMilli(), "approverInputs": inputs,
	})
	approvals := 0
	for _, act := range a.activities {
		if act["action"] == "APPROVE" {
			approvals++
		}
	}
	a.view.Approvals = approvals
	switch {
	case req.Action == "REJECT":
		a.result = "REJECTED"
	case approvals >= a.minimum:
		a.result = "APPROVED"
	}
}

// lastInputs are the approver inputs of the last vote, as name → value.
func (a *approval) lastInputs() map[string]any {
	if len(a.activities) == 0 {
		if len(a.inputs) == 0 {
			return nil
		}
		out := map[string]any{}
		for _, in := range a.inputs {
			out[in.Name] = in.Default
		}
		return out
	}
	out := map[string]any{}
	for _, e := range a.activities[len(a.activities)-1]["approverInputs"].([]any) {
		m := e.(map[string]any)
		out[m["name"].(string)] = m["value"]
	}
	return out
}

func anyList(l []map[string]any) []any {
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = x
	}
	return out
}

// registerApprove installs the approve update on a stage workflow.
func (s *decisions) registerApprove(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateApprove,
		func(ctx workflow.Context, req ApprovalRequest) (string, error) {
			a := s.approvals[req.Path]
			a.record(req, workflow.Now(ctx))
			if a.result == "" && workflow.GetVersion(ctx, changePendingMemo, workflow.DefaultVersion, 1) == 1 {
				s.reportWaiting(ctx) // the pipeline's memo shows the vote
			}
			if a.result == "REJECTED" {
				return fmt.Sprintf("%s recorded for %s: one rejection ends the approval, which is rejected", req.Action, req.Path), nil
			}
			return fmt.Sprintf("%s recorded for %s (%d of %d approvals)", req.Action, req.Path, a.view.Approvals, a.minimum), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(req ApprovalRequest) error {
			a := s.approvals[req.Path]
			if a == nil || a.result != "" {
				return refuse(ErrNotWaiting, "%s is not waiting for approval (finished, expired, or no such step)", req.Path)
			}
			return a.validate(req)
		}})
}
