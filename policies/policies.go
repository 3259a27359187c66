// Package policies evaluates Rego policies with OPA as a library. Each policy is a Rego package
// `gantry.<name>` with `deny` (and optionally `warn`) sets of messages; policy sets group them
// with a severity and say where they apply. Queries are prepared once when a directory is
// loaded, never per evaluation.
package policies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"gopkg.in/yaml.v3"
)

// Severities of a policy set.
const (
	SeverityError   = "error"   // a deny blocks (run not started, step failed)
	SeverityWarning = "warning" // a deny is recorded and the run continues
)

// Actions a set applies to.
const (
	OnRun  = "onrun"  // before an execution starts, over the merged pipeline
	Custom = "custom" // Policy steps name the set and give the payload
)

// DefaultTimeout bounds one policy evaluation; a policy that takes longer fails closed.
const DefaultTimeout = 2 * time.Second

// Set is a policy set from sets.yaml.
type Set struct {
	Identifier string   `yaml:"identifier" json:"identifier"`
	Severity   string   `yaml:"severity" json:"severity"`
	Action     string   `yaml:"action" json:"action"`
	Policies   []string `yaml:"policies" json:"policies"`
	// Scope of an onrun set: every pipeline (global), pipelines of these projects, or pipelines
	// carrying one of these tags.
	Global   bool              `yaml:"global,omitempty" json:"global,omitempty"`
	Projects []string          `yaml:"projects,omitempty" json:"projects,omitempty"`
	Tags     map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// Engine holds prepared policies and their sets. It is safe for concurrent use.
type Engine struct {
	Sets     []Set
	Timeout  time.Duration
	prepared map[string]preparedPolicy // policy name → prepared deny and warn queries
	modules  map[string]string
	compiler *ast.Compiler
	libs     []Bundle // what it was joined from, for With
	// together holds, per list of policies, one query that evaluates all their rules at once,
	// so helpers they share (gantrylib.steps walks the whole pipeline) are computed once per
	// decision instead of once per rule.
	together sync.Map // string → *jointQuery
	inputs   inputCache
}

type preparedPolicy struct {
	deny, warn rego.PreparedEvalQuery
}

// Load reads the *.rego files of dir (tests excluded) and its sets.yaml, compiles the modules
// once and prepares one query per policy. Broken Rego is an error naming file:row:col.
func Load(ctx context.Context, dir string) (*Engine, error) {
	return LoadFS(ctx, os.DirFS(dir), dir)
}

// LoadFS is Load over a file system (the embedded starter library, tests).
func LoadFS(ctx context.Context, fsys fs.FS, name string) (*Engine, error) {
	lib, err := ReadBundle(fsys, name)
	if err != nil {
		return nil, err
	}
	return Join(ctx, lib)
}

// Bundle is one policy library's texts: its Rego modules (tests excluded) and its sets.yaml.
type Bundle struct {
	// Name is where the library was read, prefixed to its files in every message.
	Name    string
	Modules map[string]string // file name → Rego text
	Sets    []byte            // sets.yaml; nil when it has none
}

// ReadBundle reads a library's *.rego files (tests excluded) and its sets.yaml.
func ReadBundle(fsys fs.FS, name string) (Bundle, error) {
	modules, err := readModules(fsys, name, false)
	if err != nil {
		return Bundle{}, err
	}
	lib := Bundle{Name: name, Modules: modules}
	if b, err := fs.ReadFile(fsys, "sets.yaml"); err == nil {
		lib.Sets = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Bundle{}, err
	}
	return lib, nil
}

// Join compiles several libraries as one engine (the server's own and those kept in Git): their
// modules together, their sets side by side. A package or set defined twice is an error.
func Join(ctx context.Context, libs ...Bundle) (*Engine, error) {
	modules := map[string]string{}
	var names []string
	for _, lib := range libs {
		names = append(names, lib.Name)
		for file, text := range lib.Modules {
			modules[file] = text
		}
	}
	compiler, err := compile(modules)
	if err != nil {
		return nil, fmt.Errorf("policies in %s do not compile:\n%v", strings.Join(names, ", "), err)
	}
	if err := distinctPackages(compiler); err != nil {
		return nil, err
	}
	e := &Engine{prepared: map[string]preparedPolicy{}, Timeout: DefaultTimeout, modules: modules, compiler: compiler, libs: libs}
	for _, pkg := range packages(compiler) {
		pol := strings.TrimPrefix(pkg, "gantry.")
		deny, err := prepare(ctx, compiler, "data."+pkg+".deny")
		if err != nil {
			return nil, err
		}
		warn, err := prepare(ctx, compiler, "data."+pkg+".warn")
		if err != nil {
			return nil, err
		}
		e.prepared[pol] = preparedPolicy{deny: deny, warn: warn}
	}
	for _, lib := range libs {
		if err := e.readSets(lib); err != nil {
			return nil, err
		}
	}
	// Prepared now, the joint query of the global on-run sets, which every decision needs
	// when no project or tag adds a set.
	if names := e.policiesOf(e.OnRunSets(Scope{})); len(names) > 1 {
		e.together.Store(strings.Join(names, "\x00"), e.prepareTogether(ctx, names))
	}
	return e, nil
}

// With is the engine joined with more libraries; a nil engine is the libraries alone.
func (e *Engine) With(ctx context.Context, libs ...Bundle) (*Engine, error) {
	if e == nil {
		return Join(ctx, libs...)
	}
	return Join(ctx, append(slices.Clone(e.libs), libs...)...)
}

// distinctPackages refuses a policy package that two files define: joined libraries would
// otherwise merge their rules silently.
func distinctPackages(c *ast.Compiler) error {
	first := map[string]string{}
	files := make([]string, 0, len(c.Modules))
	for f := range c.Modules {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		pkg := strings.TrimPrefix(c.Modules[f].Package.Path.String(), "data.")
		if !strings.HasPrefix(pkg, "gantry.") {
			continue // helper packages (gantrylib) may span files
		}
		if prev, ok := first[pkg]; ok && path.Dir(prev) != path.Dir(f) {
			return fmt.Errorf("policy %s is defined by both %s and %s: give one of them another package", strings.TrimPrefix(pkg, "gantry."), prev, f)
		}
		first[pkg] = f
	}
	return nil
}

// policiesOf lists the policies of the named sets, each once, in order.
func (e *Engine) policiesOf(sets []string) []string {
	var names []string
	for _, name := range sets {
		for _, s := range e.Sets {
			if s.Identifier != name {
				continue
			}
			for _, pol := range s.Policies {
				if !slices.Contains(names, pol) {
					names = append(names, pol)
				}
			}
		}
	}
	return names
}

// readModules reads the Rego files of a tree; tests only when withTests.
func readModules(fsys fs.FS, name string, withTests bool) (map[string]string, error) {
	modules := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return err
		}
		if strings.HasSuffix(p, "_test.rego") && !withTests {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		modules[path.Join(name, p)] = string(b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read policies in %s: %w", name, err)
	}
	return modules, nil
}

// compile parses and compiles the modules against the capabilities queries run with, so a
// call of a network builtin fails here, at its position, rather than at evaluation.
func compile(modules map[string]string) (*ast.Compiler, error) {
	parsed := make(map[string]*ast.Module, len(modules))
	for name, src := range modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		parsed[name] = m
	}
	c := ast.NewCompiler().WithCapabilities(capabilities())
	if c.Compile(parsed); c.Failed() {
		return nil, c.Errors
	}
	return c, nil
}

func (e *Engine) readSets(lib Bundle) error {
	if lib.Sets == nil {
		return nil
	}
	name := lib.Name
	var doc struct {
		PolicySets []Set `yaml:"policySets"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(lib.Sets)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s/sets.yaml: %w", name, err)
	}
	for _, s := range doc.PolicySets {
		if s.Severity != SeverityError && s.Severity != SeverityWarning {
			return fmt.Errorf("%s/sets.yaml: policy set %s: severity must be error or warning", name, s.Identifier)
		}
		if s.Action != OnRun && s.Action != Custom {
			return fmt.Errorf("%s/sets.yaml: policy set %s: action must be onrun or custom", name, s.Identifier)
		}
		for _, p := range s.Policies {
			if _, ok := e.prepared[p]; !ok {
				return fmt.Errorf("%s/sets.yaml: policy set %s names policy %q, which no package gantry.%s defines", name, s.Identifier, p, p)
			}
		}
		if slices.ContainsFunc(e.Sets, func(x Set) bool { return x.Identifier == s.Identifier }) {
			return fmt.Errorf("%s/sets.yaml: policy set %s is defined twice (another library defines it too)", name, s.Identifier)
		}
		e.Sets = append(e.Sets, s)
	}
	return nil
}

// packages lists the gantry.* packages of the compiled modules, sorted.
func packages(c *ast.Compiler) []string {
	seen := map[string]bool{}
	for _, m := range c.Modules {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if strings.HasPrefix(pkg, "gantry.") {
			seen[pkg] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func prepare(ctx context.Context, c *ast.Compiler, query string) (rego.PreparedEvalQuery, error) {
	return rego.New(append(builtinOptions(),
		rego.Query(query),
		rego.Compiler(c),
		rego.Capabilities(capabilities()),
		rego.StrictBuiltinErrors(true),
	)...).PrepareForEval(ctx)
}

// capabilities leave out builtins that reach the network and add Gantry's own.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	var keep []*ast.Builtin
	for _, b := range c.Builtins {
		if strings.HasPrefix(b.Name, "http.") || strings.HasPrefix(b.Name, "net.") || b.Name == "opa.runtime" {
			continue
		}
		keep = append(keep, b)
	}
	for _, b := range gantryBuiltins {
		keep = append(keep, b.decl)
	}
	c.Builtins = keep
	return c
}

// PolicyResult is one policy's verdict.
type PolicyResult struct {
	Policy string   `json:"policy"`
	Deny   []string `json:"deny,omitempty"`
	Warn   []string `json:"warn,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// SetResult is one set's verdict: pass, warning or error.
type SetResult struct {
	Set      string         `json:"set"`
	Severity string         `json:"severity"`
	Status   string         `json:"status"`
	Policies []PolicyResult `json:"policies"`
	Duration time.Duration  `json:"duration"`
}

// Decision is the outcome of evaluating several sets.
type Decision struct {
	Status string      `json:"status"` // pass, warning or error
	Sets   []SetResult `json:"sets"`
}

// Denied reports whether the decision blocks.
func (d *Decision) Denied() bool { return d.Status == "error" }

// Messages lists deny, warn and error messages, each prefixed by set and policy.
func (d *Decision) Messages() []string {
	var out []string
	for _, s := range d.Sets {
		for _, p := range s.Policies {
			for _, m := range p.Deny {
				out = append(out, fmt.Sprintf("%s/%s: %s", s.Set, p.Policy, m))
			}
			for _, m := range p.Warn {
				out = append(out, fmt.Sprintf("%s/%s (warning): %s", s.Set, p.Policy, m))
			}
			if p.Error != "" {
				out = append(out, fmt.Sprintf("%s/%s: evaluation failed, counted as a deny: %s", s.Set, p.Policy, p.Error))
			}
		}
	}
	return out
}

// Scope describes the pipeline an on-run evaluation is for.
type Scope struct {
	Project string
	Tags    map[string]string
}

// OnRunSets returns the onrun sets that apply to a pipeline.
func (e *Engine) OnRunSets(sc Scope) []string {
	var out []string
	for _, s := range e.Sets {
		if s.Action != OnRun {
			continue
		}
		match := s.Global || (sc.Project != "" && slices.Contains(s.Projects, sc.Project))
		for k, v := range s.Tags {
			if sc.Tags[k] == v {
				match = true
			}
		}
		if match {
			out = append(out, s.Identifier)
		}
	}
	return out
}

// Evaluate runs the named sets against input. A policy that errors or exceeds the timeout
// counts as a deny: governance fails closed.
func (e *Engine) Evaluate(ctx context.Context, sets []string, input any) (*Decision, error) {
	d := &Decision{Status: "pass"}
	// Convert the input once for every query of every set.
	parsed, err := e.inputs.valueOf(input)
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	var chosen []Set
	for _, name := range sets {
		i := slices.IndexFunc(e.Sets, func(s Set) bool { return s.Identifier == name })
		if i < 0 {
			return nil, fmt.Errorf("policy set %q is not defined", name)
		}
		chosen = append(chosen, e.Sets[i])
	}
	start := time.Now()
	results := e.evalTogether(ctx, e.policiesOf(sets), parsed)
	shared := time.Since(start)
	for _, set := range chosen {
		start := time.Now()
		sr := SetResult{Set: set.Identifier, Severity: set.Severity, Status: "pass"}
		for _, pol := range set.Policies {
			pr, ok := results[pol]
			if !ok {
				pr = e.evalPolicy(ctx, pol, parsed)
			}
			switch {
			case len(pr.Deny) > 0 || pr.Error != "":
				if set.Severity == SeverityError {
					sr.Status = "error"
				} else if sr.Status == "pass" {
					sr.Status = "warning"
				}
			case len(pr.Warn) > 0 && sr.Status == "pass":
				sr.Status = "warning"
			}
			sr.Policies = append(sr.Policies, pr)
		}
		sr.Duration = time.Since(start)
		if results != nil {
			sr.Duration = shared // the sets were decided together
		}
		switch {
		case sr.Status == "error":
			d.Status = "error"
		case sr.Status == "warning" && d.Status == "pass":
			d.Status = "warning"
		}
		d.Sets = append(d.Sets, sr)
	}
	return d, nil
}

// jointQuery evaluates the deny and warn rules of several policies in one query.
type jointQuery struct {
	q     rego.PreparedEvalQuery
	rules []jointRule // one per expression of the query, in order
	err   error       // preparing failed: evaluate policy by policy
}

type jointRule struct {
	policy string
	warn   bool
}

// evalTogether evaluates the policies in one query and returns their results, or nil when that
// query cannot decide them all (a rule undefined or not a set, an error, the timeout): the
// caller then evaluates each policy on its own, which attributes errors and timeouts to the
// policy that caused them.
func (e *Engine) evalTogether(ctx context.Context, names []string, input ast.Value) map[string]PolicyResult {
	if len(names) < 2 || e.compiler == nil {
		return nil
	}
	key := strings.Join(names, "\x00")
	v, ok := e.together.Load(key)
	if !ok {
		v, _ = e.together.LoadOrStore(key, e.prepareTogether(ctx, names))
	}
	j := v.(*jointQuery)
	if j.err != nil {
		return nil
	}
	timeout := e.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rs, err := j.q.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil || len(rs) != 1 || len(rs[0].Expressions) != len(j.rules) {
		return nil
	}
	out := make(map[string]PolicyResult, len(names))
	for _, n := range names {
		out[n] = PolicyResult{Policy: n}
	}
	for i, ex := range rs[0].Expressions {
		msgs, err := messageList(ex.Value)
		if err != nil {
			return nil
		}
		r := j.rules[i]
		pr := out[r.policy]
		if r.warn {
			pr.Warn = msgs
		} else {
			pr.Deny = msgs
		}
		out[r.policy] = pr
	}
	return out
}

// prepareTogether prepares the joint query of the rules the policies define; a policy
// without a warn rule has no warnings, as when its own query is undefined.
func (e *Engine) prepareTogether(ctx context.Context, names []string) *jointQuery {
	j := &jointQuery{}
	var exprs []string
	for _, n := range names {
		if _, ok := e.prepared[n]; !ok {
			return &jointQuery{err: fmt.Errorf("policy %q is not loaded", n)}
		}
		for _, warn := range []bool{false, true} {
			rule := "data.gantry." + n + ".deny"
			if warn {
				rule = "data.gantry." + n + ".warn"
			}
			ref, err := ast.ParseRef(rule)
			if err != nil {
				return &jointQuery{err: err}
			}
			if len(e.compiler.GetRulesExact(ref)) == 0 {
				continue
			}
			exprs = append(exprs, rule)
			j.rules = append(j.rules, jointRule{policy: n, warn: warn})
		}
	}
	if len(exprs) == 0 {
		return &jointQuery{err: errors.New("no rules")}
	}
	j.q, j.err = prepare(ctx, e.compiler, strings.Join(exprs, "; "))
	return j
}

func (e *Engine) evalPolicy(ctx context.Context, pol string, input ast.Value) PolicyResult {
	pr := PolicyResult{Policy: pol}
	p := e.prepared[pol]
	timeout := e.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if pr.Deny, err = messages(ctx, p.deny, input, timeout); err != nil {
		pr.Error = err.Error()
		return pr
	}
	if pr.Warn, err = messages(ctx, p.warn, input, timeout); err != nil {
		pr.Error = err.Error()
	}
	return pr
}

// messages evaluates a set-valued rule into sorted strings; an undefined rule is empty.
func messages(ctx context.Context, q rego.PreparedEvalQuery, input ast.Value, timeout time.Duration) ([]string, error) {
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timed out after %s", timeout)
		}
		return nil, err
	}
	var out []string
	for _, r := range rs {
		for _, ex := range r.Expressions {
			list, err := messageList(ex.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, list...)
		}
	}
	sort.Strings(out)
	return out, nil
}

// messageList reads a deny or warn set's value as sorted strings.
func messageList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("deny and warn must be sets of messages, got %T", v)
	}
	var out []string
	for _, m := range list {
		out = append(out, fmt.Sprint(m))
	}
	sort.Strings(out)
	return out, nil
}
