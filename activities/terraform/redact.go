package terraform

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Masked replaces every sensitive value in a redacted plan.
const Masked = "(sensitive value)"

// Redact returns a plan's `show -json` with its sensitive values masked, for
// exportTerraformPlanJson and anything else that leaves the worker. The binary marks what it
// knows is sensitive (sensitive variables, the sensitive_values, before_sensitive and
// after_sensitive masks, sensitive outputs), but not every copy: a computed attribute derived
// from a sensitive one can appear unmarked (terraform_data's output of a sensitive input). So
// the values found marked, and secrets the caller knows (extra: the step's secret variables),
// are also masked wherever else they appear, as the step log's writer masks them.
func Redact(planJSON []byte, extra ...string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(planJSON, &doc); err != nil {
		return nil, fmt.Errorf("read the plan's JSON: %w", err)
	}
	r := &redactor{}
	for _, s := range extra {
		r.add(s)
	}
	// Sensitive variables, as the configuration declares them.
	if vars, ok := dig(doc, "configuration", "root_module", "variables").(map[string]any); ok {
		values, _ := doc["variables"].(map[string]any)
		for name, decl := range vars {
			if d, _ := decl.(map[string]any); d["sensitive"] == true {
				if v, ok := values[name].(map[string]any); ok {
					v["value"] = r.mask(v["value"], true)
				}
			}
		}
	}
	// Resources in planned values and the prior state, at any module depth.
	for _, root := range []any{dig(doc, "planned_values", "root_module"), dig(doc, "prior_state", "values", "root_module")} {
		r.module(root)
	}
	for _, outs := range []any{dig(doc, "planned_values", "outputs"), dig(doc, "prior_state", "values", "outputs")} {
		if m, ok := outs.(map[string]any); ok {
			for _, o := range m {
				if o, ok := o.(map[string]any); ok && o["sensitive"] == true {
					o["value"] = r.mask(o["value"], true)
				}
			}
		}
	}
	// Changes: before and after with their masks.
	changes := []map[string]any{}
	if rcs, ok := doc["resource_changes"].([]any); ok {
		for _, rc := range rcs {
			if c, ok := dig(rc, "change").(map[string]any); ok {
				changes = append(changes, c)
			}
		}
	}
	if ocs, ok := doc["output_changes"].(map[string]any); ok {
		for _, oc := range ocs {
			if c, ok := oc.(map[string]any); ok {
				changes = append(changes, c)
			}
		}
	}
	for _, c := range changes {
		c["before"] = r.mask(c["before"], c["before_sensitive"])
		c["after"] = r.mask(c["after"], c["after_sensitive"])
	}
	// Every other copy of a value found sensitive.
	r.sweep(doc)
	return json.Marshal(doc)
}

type redactor struct{ secrets []string }

func (r *redactor) add(s string) {
	if len(s) >= 3 && !slices.Contains(r.secrets, s) {
		r.secrets = append(r.secrets, s)
	}
}

// module masks a module's resources by their sensitive_values, and its child modules'.
func (r *redactor) module(m any) {
	mod, ok := m.(map[string]any)
	if !ok {
		return
	}
	if res, ok := mod["resources"].([]any); ok {
		for _, x := range res {
			if x, ok := x.(map[string]any); ok {
				x["values"] = r.mask(x["values"], x["sensitive_values"])
			}
		}
	}
	if kids, ok := mod["child_modules"].([]any); ok {
		for _, k := range kids {
			r.module(k)
		}
	}
}

// mask replaces the parts of v its mask marks true (a bool, or a mirror of v's shape), and
// remembers them.
func (r *redactor) mask(v, mask any) any {
	switch m := mask.(type) {
	case bool:
		if !m || v == nil {
			return v
		}
		r.remember(v)
		return Masked
	case map[string]any:
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for k, sub := range m {
			if _, ok := obj[k]; ok {
				obj[k] = r.mask(obj[k], sub)
			}
		}
		return obj
	case []any:
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		for i := range min(len(arr), len(m)) {
			arr[i] = r.mask(arr[i], m[i])
		}
		return arr
	}
	return v
}

// remember keeps every scalar of a sensitive value.
func (r *redactor) remember(v any) {
	switch x := v.(type) {
	case string:
		r.add(x)
	case float64, bool:
		// Numbers and booleans are masked where marked; their other copies are not told
		// apart from ordinary values.
	case map[string]any:
		for _, e := range x {
			r.remember(e)
		}
	case []any:
		for _, e := range x {
			r.remember(e)
		}
	}
}

// sweep masks the remembered secrets in every string of the document.
func (r *redactor) sweep(v any) any {
	switch x := v.(type) {
	case string:
		for _, s := range r.secrets {
			x = strings.ReplaceAll(x, s, Masked)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = r.sweep(e)
		}
	case []any:
		for i, e := range x {
			x[i] = r.sweep(e)
		}
	}
	return v
}

// dig follows keys through nested objects; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
