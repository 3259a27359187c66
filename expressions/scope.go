package expressions

import (
	"regexp"
	"slices"
	"strings"
)

var secretIDRe = regexp.MustCompile(`^((account|org)\.)?[a-zA-Z_][0-9a-zA-Z_$-]{0,127}$`)

// Scope is what expressions read: the execution context tree and the node being evaluated.
//
// Data holds the roots. "pipeline" is the FQN tree of spec 9.3 (stages and steps keyed by
// identifier, variables by name, with runtime data such as status and output attached to nodes);
// the other roots (matrix, repeat, strategy, env, service, infra, artifacts, trigger, ...) are
// read as they are. Current is the FQN of the node being evaluated, for example
// "pipeline.stages.deploy.spec.execution.steps.canary.steps.probe"; it anchors the relative
// references of spec 9.4 (stage., step., stepGroup., execution., steps., spec., ancestors).
type Scope struct {
	Data    map[string]any
	current []string
}

// NewScope returns a scope over data, evaluated at the node with the given FQN ("" for the
// pipeline level).
func NewScope(data map[string]any, current string) *Scope {
	s := &Scope{Data: data}
	if current != "" {
		s.current = strings.Split(current, ".")
	}
	return s
}

// Current returns the FQN of the node the scope evaluates at.
func (s *Scope) Current() string { return strings.Join(s.current, ".") }

// statusAliases are the condition aliases of spec 4.2.
var statusAliases map[string]func(s *Scope) any

func init() {
	statusAliases = map[string]func(s *Scope) any{
		"OnStageSuccess": func(s *Scope) any { return oneOf(s.lookupRel("stage", "currentStatus"), "SUCCEEDED", "IGNORE_FAILED") },
		"OnStageFailure": func(s *Scope) any { return oneOf(s.lookupRel("stage", "currentStatus"), brokeStatuses...) },
		"OnPipelineSuccess": func(s *Scope) any {
			return oneOf(s.lookupRel("pipeline", "currentStatus"), "SUCCEEDED", "IGNORE_FAILED")
		},
		"OnPipelineFailure": func(s *Scope) any { return oneOf(s.lookupRel("pipeline", "currentStatus"), brokeStatuses...) },
		"OnRollbackModeExecution": func(s *Scope) any {
			return oneOf(s.lookupRel("ambiance", "metadata", "executionMode"), "POST_EXECUTION_ROLLBACK", "PIPELINE_ROLLBACK")
		},
		"Always": func(*Scope) any { return true },
	}
}

var brokeStatuses = []string{"FAILED", "ERRORED", "EXPIRED", "APPROVAL_REJECTED"}

func oneOf(v any, set ...string) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

func (s *Scope) lookupRel(segs ...string) any {
	anys := make([]any, len(segs))
	for i, x := range segs {
		anys[i] = x
	}
	return s.resolve(anys)
}

// resolve finds a reference path, trying the roots of spec 9.4 in order and returning the first
// non-null value.
func (s *Scope) resolve(segs []any) any {
	first, _ := segs[0].(string)
	rest := segs[1:]
	if len(rest) == 0 {
		if alias, ok := statusAliases[first]; ok {
			return alias(s)
		}
	}
	if first == "pipeline" {
		return walk(s.Data["pipeline"], rest)
	}
	if node, ok := s.aliasNode(first); ok {
		return walk(node, rest)
	}
	if len(s.current) > 0 {
		// Outcomes and outputs of the current node, then its children.
		cur := s.nodeAt(s.current)
		if v := walk(index(cur, "output"), segs); v != nil {
			return v
		}
		if v := walk(cur, segs); v != nil {
			return v
		}
		// Ancestors, nearest first, matched by identifier.
		for i := len(s.current) - 1; i >= 1; i-- {
			if s.current[i] == first && isNodeKey(s.current[i-1]) {
				if v := walk(s.nodeAt(s.current[:i+1]), rest); v != nil {
					return v
				}
			}
		}
	}
	if v, ok := s.Data[first]; ok && v != nil {
		return walk(v, rest)
	}
	return nil
}

func isNodeKey(container string) bool {
	return container == "stages" || container == "steps" || container == "rollbackSteps"
}

// aliasNode returns the node a group alias (spec 9.4) points to from the current node.
func (s *Scope) aliasNode(name string) (any, bool) {
	c := s.current
	switch name {
	case "stage":
		if len(c) >= 3 && c[1] == "stages" {
			return s.nodeAt(c[:3]), true
		}
	case "execution":
		if len(c) >= 3 && c[1] == "stages" {
			return index(index(s.nodeAt(c[:3]), "spec"), "execution"), true
		}
	case "step":
		if len(c) >= 2 && isStepContainer(c[len(c)-2]) {
			return s.nodeAt(c), true
		}
	case "stepGroup":
		for i := len(c) - 2; i >= 1; i-- {
			if isStepContainer(c[i]) && i+2 < len(c) && isStepContainer(c[i+2]) {
				return s.nodeAt(c[:i+2]), true
			}
		}
	case "steps":
		if len(c) >= 2 && isStepContainer(c[len(c)-2]) {
			return s.nodeAt(c[:len(c)-1]), true
		}
	case "spec":
		if len(c) > 0 {
			return index(s.nodeAt(c), "spec"), true
		}
	}
	return nil, false
}

func isStepContainer(s string) bool { return s == "steps" || s == "rollbackSteps" }

// nodeAt returns the context node at an FQN starting with "pipeline".
func (s *Scope) nodeAt(fqn []string) any {
	if len(fqn) == 0 || fqn[0] != "pipeline" {
		return nil
	}
	cur := s.Data["pipeline"]
	for _, k := range fqn[1:] {
		if cur = index(cur, k); cur == nil {
			return nil
		}
	}
	return cur
}

func walk(cur any, segs []any) any {
	for _, k := range segs {
		if cur == nil {
			return nil
		}
		cur = index(cur, k)
	}
	return cur
}

// PathString renders reference segments for messages: pipeline.stages.s1.status.
func PathString(segs []any) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = ToString(s)
	}
	return strings.Join(parts, ".")
}

// ambiguousStep reports the paths of the steps that a relative reference to a step by identifier
// (<+execution.steps.X...>, <+steps.X...>) could mean when the list it names has no node X: the
// nodes of that identifier nested in different step groups below it, none enclosing another
// (spec 1.8 revised). Such a reference is an evaluation error rather than null, since the reader
// cannot tell which step was meant. A step inside a group of its own identifier (allowed before
// 1.8 was revised) is not ambiguous, so earlier histories render as they did. Otherwise nil.
func (s *Scope) ambiguousStep(segs []any) []string {
	first, _ := segs[0].(string)
	var list any
	var id string
	switch {
	case first == "execution" && len(segs) >= 3 && segs[1] == "steps":
		node, _ := s.aliasNode("execution")
		list, id = index(node, "steps"), ToString(segs[2])
	case first == "steps" && len(segs) >= 2:
		list, _ = s.aliasNode("steps")
		id = ToString(segs[1])
	default:
		return nil
	}
	if index(list, id) != nil {
		return nil // the list has X itself: the reference names it, whatever it lacks
	}
	var found []string
	var visit func(list any, path string)
	visit = func(list any, path string) {
		m, _ := list.(map[string]any)
		for _, k := range sortedKeys(m) {
			if k == id {
				found = append(found, path+k)
			}
			for _, inner := range []string{"steps", "rollbackSteps"} {
				visit(index(m[k], inner), path+k+"."+inner+".")
			}
		}
	}
	visit(list, "")
	// Keep the matches that no other match encloses; two or more of them are ambiguous.
	var apart []string
	for _, p := range found {
		if !slices.ContainsFunc(found, func(q string) bool { return q != p && strings.HasPrefix(p, q+".") }) {
			apart = append(apart, p)
		}
	}
	if len(apart) < 2 {
		return nil
	}
	return apart
}
