package validate

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/plan/duration"
)

var (
	identifierRe = regexp.MustCompile(`^[a-zA-Z_][0-9a-zA-Z_]{0,127}$`)
	nameRe       = regexp.MustCompile(`^[a-zA-Z_0-9\-.][-0-9a-zA-Z_\s.]{0,127}$`)
	variableRe   = regexp.MustCompile(`^[a-zA-Z_][0-9a-zA-Z_.$-]{0,127}$`)
	secretIDRe   = regexp.MustCompile(`^((account|org)\.)?[a-zA-Z_][0-9a-zA-Z_$-]{0,127}$`)
)

// reserved is the union of the engine's and the documentation's reserved identifiers (spec 1.8).
var reserved = map[string]bool{
	"or": true, "and": true, "eq": true, "ne": true, "lt": true, "gt": true, "le": true, "ge": true,
	"div": true, "mod": true, "not": true, "null": true, "true": true, "false": true, "new": true,
	"var": true, "return": true, "step": true, "parallel": true, "stepGroup": true, "org": true,
	"account": true, "class": true, "shellScriptProvisioner": true, "status": true, "liteEngineTask": true,
}

// dynamic reports whether a value is decided at run time (expression or runtime input).
func dynamic(s string) bool { return strings.Contains(s, "<+") }

func (c *checker) identifier(obj *yaml.Node, key, id, what string) {
	if pipeline.Field(obj, key) == nil {
		return // missing required fields are reported by the parser
	}
	at := c.pos(pipeline.ValueAt(obj, key))
	switch {
	case !identifierRe.MatchString(id):
		c.diags.Errorf(at, "identifier", "%s identifier %q is invalid", what, id).
			SetHint("use letters, digits and _, not starting with a digit, at most 128 characters (e.g. %s)", suggestID(id))
	case reserved[id]:
		c.diags.Errorf(at, "reserved-identifier", "%s identifier %q is a reserved word", what, id).
			SetHint("pick another identifier, e.g. %s_1", id)
	case strings.Contains(id, "_harness_system"):
		c.diags.Warnf(at, "identifier", "%s identifier %q contains _harness_system, which is meant for system entities", what, id)
	}
}

// reference checks an entity reference: an identifier, optionally scoped as the reference
// allows (`org.prod`, `account.shared_cluster`); Gantry resolves it against the local entity
// files by its identifier.
func (c *checker) reference(obj *yaml.Node, key, ref, what string) {
	c.identifier(obj, key, pipeline.LocalRef(ref), what)
}

func suggestID(id string) string {
	var b strings.Builder
	for i, r := range id {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9' && i > 0):
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			b.WriteString("_")
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "my_identifier"
	}
	return b.String()
}

func (c *checker) name(obj *yaml.Node, name, what string) {
	if pipeline.Field(obj, "name") == nil {
		return
	}
	if dynamic(name) {
		// The reference's name pattern admits no `<`: names are fixed text.
		c.diags.Errorf(c.pos(pipeline.ValueAt(obj, "name")), "name", "%s name %q is an expression; names are fixed text", what, name).
			SetHint("write the name itself; expressions may read it as <+...name>")
		return
	}
	if !nameRe.MatchString(name) {
		c.diags.Errorf(c.pos(pipeline.ValueAt(obj, "name")), "name", "%s name %q is invalid", what, name).
			SetHint("names use letters, digits, spaces, '-', '_' and '.', at most 128 characters")
	}
}

// duration checks a duration field; expressions and runtime inputs are checked at run time.
func (c *checker) duration(obj *yaml.Node, key, value, what string) {
	if value == "" || dynamic(value) {
		return
	}
	if _, err := duration.Parse(strings.TrimSpace(value)); err != nil {
		c.diags.Errorf(c.pos(pipeline.ValueAt(obj, key)), "duration", "%s: %v", what, err).
			SetHint("write durations like 30s, 10m, 1h30m, 1d or 1w (seconds-only values need at least 10s)")
	}
}

// timeout checks a node timeout, which may not be an execution-time input (spec 1.10).
func (c *checker) timeout(obj *yaml.Node, value, what string) {
	c.duration(obj, "timeout", value, what+" timeout")
	c.noExecutionInput(obj, "timeout", value, what+" timeout")
}

func (c *checker) noExecutionInput(obj *yaml.Node, key, value, what string) {
	if inputs.IsRuntimeInput(value) {
		if in, err := inputs.Parse(value); err == nil && in.ExecutionInput {
			c.diags.Errorf(c.pos(pipeline.ValueAt(obj, key)), "execution-input", "%s cannot be an execution-time input", what).
				SetHint("drop .executionInput(); a plain <+input> is asked for when the run starts")
		}
	}
}

func (c *checker) boolean(obj *yaml.Node, key, value string) {
	if value == "" || dynamic(value) {
		return
	}
	if _, err := strconv.ParseBool(value); err != nil || (value != "true" && value != "false") {
		c.diags.Errorf(c.pos(pipeline.ValueAt(obj, key)), "boolean", "%s must be true or false, got %q", key, value)
	}
}

// integer checks an integer field with a lower bound; fixed forbids expressions.
func (c *checker) integer(obj *yaml.Node, key, value string, min int, fixed bool, what string) {
	if value == "" {
		return
	}
	at := c.pos(pipeline.ValueAt(obj, key))
	if dynamic(value) {
		if fixed {
			c.diags.Errorf(at, "fixed-value", "%s must be a fixed number, not an expression or runtime input", what)
		}
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil {
		c.diags.Errorf(at, "integer", "%s must be a whole number, got %q", what, value)
		return
	}
	if n < min {
		c.diags.Errorf(at, "range", "%s must be at least %d, got %d", what, min, n)
	}
}

func (c *checker) enum(obj *yaml.Node, key, value string, allowed []string, what string) {
	if value == "" || dynamic(value) {
		return
	}
	for _, a := range allowed {
		if a == value {
			return
		}
	}
	d := c.diags.Errorf(c.pos(pipeline.ValueAt(obj, key)), "enum", "%s %q is not one of %s", what, value, strings.Join(allowed, ", "))
	if s := pipeline.Closest(value, allowed); s != "" {
		d.SetHint("did you mean %q? (values are case-sensitive)", s)
	}
}

// variables checks a variable list (spec 10.1).
func (c *checker) variables(vars []pipeline.Variable, scope string) {
	seen := map[string]bool{}
	for _, v := range vars {
		at := c.pos(pipeline.ValueAt(v.Node, "name"))
		switch {
		case v.Name == "":
		case !variableRe.MatchString(v.Name):
			c.diags.Errorf(at, "variable-name", "%s variable name %q is invalid", scope, v.Name).
				SetHint("use letters, digits, _, ., $ and -, not starting with a digit")
		case seen[v.Name]:
			c.diags.Errorf(at, "duplicate-variable", "%s variable %q is declared twice", scope, v.Name)
		}
		seen[v.Name] = true
		c.enum(v.Node, "type", v.Type, []string{"String", "Number", "Secret"}, "variable type")
		c.boolean(v.Node, "required", v.Required)
		if scope == "step group" {
			c.noExecutionInput(v.Node, "value", v.Value, "step group variable "+v.Name)
		}
		if dynamic(v.Value) || v.Value == "" {
			continue
		}
		switch v.Type {
		case "Number":
			if _, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64); err != nil {
				c.diags.Errorf(c.pos(pipeline.ValueAt(v.Node, "value")), "variable-value", "Number variable %q has non-numeric value %q", v.Name, v.Value)
			}
		case "Secret":
			if !secretIDRe.MatchString(v.Value) {
				c.diags.Errorf(c.pos(pipeline.ValueAt(v.Node, "value")), "variable-value", "Secret variable %q must hold a secret identifier, got %q", v.Name, v.Value).
					SetHint("a Secret variable names a secret (e.g. account.dockerhub_pat); never put the secret itself in YAML")
			}
		}
	}
}

// conditionKeys are scalar fields read as JEXL conditions rather than text.
var conditionKeys = map[string]bool{"condition": true, "assertion": true, "skipCondition": true, "jexlCondition": true,
	"expression": true} // an approval's Jexl criteria

// scalars checks every runtime input and expression in a tree, at its own position.
func (c *checker) scalars(n *yaml.Node, key string) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v := n.Content[i+1]
			if k == "when" && v.Kind == yaml.ScalarNode && key == "strategy" {
				k = "condition" // strategy.when is a condition
			}
			c.scalars(v, k)
		}
	case yaml.SequenceNode:
		for _, v := range n.Content {
			c.scalars(v, key)
		}
	case yaml.ScalarNode:
		c.scalar(n, key)
	}
}

func (c *checker) scalar(n *yaml.Node, key string) {
	v := n.Value
	if !strings.Contains(v, "<+") {
		return
	}
	if inputs.IsRuntimeInput(v) {
		if _, err := inputs.Parse(v); err != nil {
			pe := err.(*inputs.ParseError)
			d := c.diags.Errorf(c.src.OffsetPos(n, pe.Offset), "runtime-input", "invalid runtime input: %s", pe.Message)
			if pe.Hint != "" {
				d.SetHint("%s", pe.Hint)
			}
		}
		if key == "condition" {
			if in, err := inputs.Parse(v); err == nil && in.ExecutionInput {
				c.diags.Errorf(c.pos(n), "execution-input", "a when condition cannot be an execution-time input")
			}
		}
		return
	}
	mode := expressions.Text
	if conditionKeys[key] {
		mode = expressions.Condition
	}
	if _, err := expressions.Compile(v, mode); err != nil {
		ee := err.(*expressions.Error)
		c.diags.Errorf(c.src.OffsetPos(n, ee.Offset), "expression", "invalid expression: %s", ee.Message).
			SetHint("expressions look like <+pipeline.variables.name>; wrap operators in an outer <+...>, e.g. <+<+a> == \"x\">")
	}
}
