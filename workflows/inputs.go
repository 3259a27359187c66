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
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// UpdateInput supplies a waiting step's execution-time inputs (InputRequest); sent to the stage
// workflow that owns the step.
const UpdateInput = "input"

// InputRequest answers a step's execution-time inputs, by key (spec.environmentVariables.WHO).
type InputRequest struct {
	Path   string            `json:"path"`
	User   string            `json:"user"`
	Values map[string]string `json:"values"`
}

// inputWait is a step waiting in INPUT_WAITING.
type inputWait struct {
	decl   []plan.ExecInput
	values map[string]string
	by     string
}

// askInputs puts a step in INPUT_WAITING until a user supplies its execution-time inputs or the
// step's timeout passes (category InputTimeoutError, spec 9.7).
func (s *decisions) askInputs(ctx workflow.Context, n *plan.Node, t *Node, timeout time.Duration) (map[string]string, *contract.Failure) {
	w := &inputWait{decl: n.Inputs}
	s.inputs[t.Path] = w
	defer delete(s.inputs, t.Path)
	t.Status = status.InputWaiting
	for _, in := range n.Inputs {
		t.Inputs = append(t.Inputs, in.Key)
	}
	defer func() { t.Inputs = nil }()
	s.setWaiting(ctx, t.Path, status.InputWaiting)
	defer s.setWaiting(ctx, t.Path, "")
	done, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return w.values != nil })
	switch {
	case err != nil:
		return nil, &contract.Failure{Category: aborted, Message: "aborted"}
	case !done:
		return nil, &contract.Failure{Category: contract.InputTimeout, Message: fmt.Sprintf("no execution-time input within %s", timeout)}
	}
	t.Notes = append(t.Notes, "inputs supplied by "+w.by)
	s.notices.stepEvent(ctx, contract.EventPipelineResumed, t, status.Running)
	return w.values, nil
}

// defaultInputs are the values ProceedWithDefaultValues uses: defaults, or empty.
func defaultInputs(decl []plan.ExecInput) map[string]string {
	out := map[string]string{}
	for _, in := range decl {
		if in.Default != nil {
			out[in.Key] = *in.Default
		} else {
			out[in.Key] = ""
		}
	}
	return out
}

// withInputs returns a copy of spec with the input values set at their locations.
func withInputs(spec any, decl []plan.ExecInput, values map[string]string) any {
	out := deepCopy(spec)
	for _, in := range decl {
		v, ok := values[in.Key]
		if !ok {
			continue
		}
		setAt(out, in.At, v)
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

func setAt(tree any, at []string, v string) {
	for i, seg := range at {
		last := i == len(at)-1
		switch x := tree.(type) {
		case map[string]any:
			if last {
				x[seg] = v
				return
			}
			tree = x[seg]
		case []any:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx >= len(x) {
				return
			}
			if last {
				x[idx] = v
				return
			}
			tree = x[idx]
		default:
			return
		}
	}
}

// validateInputs checks a user's answer: known keys, every input without a default given,
// allowed values and full-match regexes.
func (w *inputWait) validate(req InputRequest) error {
	for k := range req.Values {
		if !slices.ContainsFunc(w.decl, func(in plan.ExecInput) bool { return in.Key == k }) {
			var keys []string
			for _, in := range w.decl {
				keys = append(keys, in.Key)
			}
			return refuse(ErrInvalid, "%s has no execution-time input %q; inputs: %s", req.Path, k, strings.Join(keys, ", "))
		}
	}
	for _, in := range w.decl {
		v, ok := req.Values[in.Key]
		if !ok {
			if in.Default == nil {
				return refuse(ErrInvalid, "input %s needs a value (it has no default)", in.Key)
			}
			continue
		}
		if len(in.AllowedValues) > 0 && !slices.Contains(in.AllowedValues, v) {
			return refuse(ErrInvalid, "input %s: %q is not one of %s", in.Key, v, strings.Join(in.AllowedValues, ", "))
		}
		if in.Regex != "" {
			re, err := regexp.Compile("^(?:" + in.Regex + ")$")
			if err == nil && !re.MatchString(v) {
				return refuse(ErrInvalid, "input %s: %q does not match %s", in.Key, v, in.Regex)
			}
		}
	}
	return nil
}

// registerInput installs the input update on a stage workflow.
func (s *decisions) registerInput(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateInput,
		func(ctx workflow.Context, req InputRequest) (string, error) {
			w := s.inputs[req.Path]
			vals := defaultInputs(w.decl)
			for k, v := range req.Values {
				vals[k] = v
			}
			w.values, w.by = vals, req.User
			return fmt.Sprintf("inputs of %s supplied", req.Path), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(req InputRequest) error {
			if req.User == "" {
				return refuse(ErrForbidden, "the request carries no authenticated user")
			}
			w := s.inputs[req.Path]
			if w == nil || w.values != nil {
				return refuse(ErrNotWaiting, "%s is not waiting for execution-time inputs", req.Path)
			}
			return w.validate(req)
		}})
}
