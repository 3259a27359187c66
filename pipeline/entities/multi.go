package entities

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/plan"
)

// Multi is a multi-service or multi-environment Deployment stage resolved into its implicit
// loop (spec 21.2): one iteration per combination, each with its own deployment.
type Multi struct {
	Strategy *plan.Strategy
	Deploys  map[string]*plan.Deployment // by plan.DeployKey
	// The resolved service list, for a later stage's services.useFromStage.
	services         []*plan.Service
	serviceRefs      []string
	servicesParallel bool
}

// The stage's sections, decoded here: their shapes are the reference's (spec 21.1).
type servicesSection struct {
	Node         *yaml.Node             `yaml:"-"`
	Values       *yaml.Node             `yaml:"values"`
	Metadata     *parallelMeta          `yaml:"metadata"`
	UseFromStage *pipeline.UseFromStage `yaml:"useFromStage"`
}

type parallelMeta struct {
	Node     *yaml.Node `yaml:"-"`
	Parallel string     `yaml:"parallel"`
}

type environmentsSection struct {
	Node     *yaml.Node    `yaml:"-"`
	Values   *yaml.Node    `yaml:"values"`
	Metadata *parallelMeta `yaml:"metadata"`
}

type environmentGroupSection struct {
	Node         *yaml.Node    `yaml:"-"`
	EnvGroupRef  string        `yaml:"envGroupRef" gantry:"required"`
	DeployToAll  string        `yaml:"deployToAll"`
	Environments *yaml.Node    `yaml:"environments"`
	Metadata     *parallelMeta `yaml:"metadata"`
}

type multiDeploymentConfig struct {
	Node           *yaml.Node `yaml:"-"`
	OnFailure      string     `yaml:"onFailure"`
	MaxConcurrency string     `yaml:"maxConcurrency"`
	When           string     `yaml:"when"`
}

// target is one (environment, infrastructure) pair.
type target struct {
	envRef, infraID string
	env             *pipeline.File
	infra           *plan.Infrastructure
	groupRef        string
}

// multi resolves a stage with `services`, `environments` or `environmentGroup`.
func (r *resolver) multi(s *pipeline.Stage) {
	spec := s.Deployment
	dec := &pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &r.diags}
	nerr := len(r.diags.Invalid()) + len(r.diags.UnsupportedOnly())
	stepManifests := r.stepManifests(s) // every iteration applies the same step manifests
	f := fanout{servicesParallel: true, targetsParallel: true}
	if !r.multiServices(s, dec, &f) || !r.multiTargets(s, dec, &f) {
		return
	}
	r.targetsOnce(s, f.targets)
	if len(r.diags.Invalid())+len(r.diags.UnsupportedOnly()) > nerr || len(f.services) == 0 || len(f.targets) == 0 || slices.Contains(f.services, nil) {
		return // reported, or open runtime inputs a run fills
	}
	var cfg multiDeploymentConfig
	if n := pipeline.Field(spec.Node, "multiDeploymentConfig"); n != nil {
		dec.Decode(n, &cfg, "multiDeploymentConfig")
	}
	m := &Multi{Deploys: map[string]*plan.Deployment{}, Strategy: &plan.Strategy{ItemsAsMatrix: true, OnFailure: cfg.OnFailure, When: cfg.When}}
	if spec.Services != nil {
		m.services, m.serviceRefs, m.servicesParallel = f.services, f.serviceRefs, f.servicesParallel
	}
	f.multiServices, f.multiTargets = spec.Services != nil, spec.Environments != nil || spec.EnvironmentGroup != nil
	m.Strategy.Items = f.iterations(func(item map[string]any, si int, t target) {
		m.Deploys[plan.DeployKey(item)] = deployment(spec.DeploymentType, f.services[si], t, stepManifests)
	})
	m.Strategy.MaxConcurrency = strconv.Itoa(f.concurrency(len(m.Strategy.Items.([]any))))
	if cfg.MaxConcurrency != "" {
		m.Strategy.MaxConcurrency = cfg.MaxConcurrency
	}
	r.multis[s.Identifier] = m
}

// fanout is what a multi-deployment stage deploys: its services and its targets (environment
// and infrastructure pairs), and whether each runs in parallel.
type fanout struct {
	services                    []*plan.Service
	serviceRefs                 []string
	servicesParallel            bool
	targets                     []target
	targetsParallel             bool
	multiServices, multiTargets bool // several services, several targets
}

// multiServices resolves the stage's services, in order (S), and whether they run in
// parallel; false when the stage cannot be resolved (reported).
func (r *resolver) multiServices(s *pipeline.Stage, dec *pipeline.Decoder, f *fanout) bool {
	spec := s.Deployment
	at := func(n *yaml.Node) diag.Pos { return r.at(r.file, n) }
	switch {
	case spec.Services != nil:
		var sec servicesSection
		dec.Decode(spec.Services, &sec, "services")
		if sec.UseFromStage != nil {
			// The earlier stage's resolved services and their metadata (spec 21.1 Decision).
			prev, ok := r.multis[sec.UseFromStage.Stage]
			if !ok || prev.services == nil {
				if !r.seen[sec.UseFromStage.Stage] || r.out[sec.UseFromStage.Stage] != nil || ok {
					r.diags.Errorf(at(sec.UseFromStage.Node), "unknown-reference",
						"stage %s: services.useFromStage %q is not an earlier stage deploying several services", s.Identifier, sec.UseFromStage.Stage).
						SetHint("name an earlier Deployment stage with `services`; for a single service use `service: {useFromStage: ...}`")
				}
				return false
			}
			f.services, f.serviceRefs, f.servicesParallel = prev.services, prev.serviceRefs, prev.servicesParallel
			return true
		}
		list, ok := r.literalList(s, sec.Values, "services.values", spec.Services)
		if !ok {
			return false
		}
		for _, el := range list {
			var ss pipeline.DeploymentStageService
			dec.Decode(el, &ss, "service")
			if slices.Contains(f.serviceRefs, ss.ServiceRef) {
				r.diags.Errorf(at(pipeline.ValueAt(el, "serviceRef")), "duplicate-identifier", "stage %s deploys service %s twice", s.Identifier, ss.ServiceRef).
					SetHint("each service may appear once: its iterations would be indistinguishable")
				continue
			}
			f.serviceRefs = append(f.serviceRefs, ss.ServiceRef)
			f.services = append(f.services, r.service(ss))
		}
		f.servicesParallel = r.parallel(s, sec.Metadata, "services")
	case spec.Service != nil:
		var ss pipeline.DeploymentStageService
		dec.Decode(spec.Service, &ss, "stage service")
		if ss.UseFromStage != nil || ss.ServiceRef == "" || pipeline.IsRuntimeInput(ss.ServiceRef) {
			r.diags.Unsupportedf(at(spec.Service), "unsupported-deployment-form", "stage %s: a propagated or open service with several environments is not supported yet", s.Identifier)
			return false
		}
		f.services, f.serviceRefs = []*plan.Service{r.service(ss)}, []string{""}
	}
	return true
}

// multiTargets resolves the stage's targets, in order (T), and whether they run in parallel;
// false when the stage cannot be resolved (reported).
func (r *resolver) multiTargets(s *pipeline.Stage, dec *pipeline.Decoder, f *fanout) bool {
	spec := s.Deployment
	switch {
	case spec.Environments != nil:
		var sec environmentsSection
		dec.Decode(spec.Environments, &sec, "environments")
		list, ok := r.literalList(s, sec.Values, "environments.values", spec.Environments)
		if !ok {
			return false
		}
		for _, el := range list {
			f.targets = append(f.targets, r.targets(s, el, "")...)
		}
		f.targetsParallel = r.parallel(s, sec.Metadata, "environments")
	case spec.EnvironmentGroup != nil:
		var sec environmentGroupSection
		dec.Decode(spec.EnvironmentGroup, &sec, "environmentGroup")
		f.targets = r.groupTargets(s, sec)
		f.targetsParallel = r.parallel(s, sec.Metadata, "environmentGroup")
	case spec.Environment != nil:
		var se pipeline.DeploymentStageEnvironment
		dec.Decode(spec.Environment, &se, "stage environment")
		if se.UseFromStage != nil || pipeline.IsRuntimeInput(se.EnvironmentRef) {
			r.diags.Unsupportedf(r.at(r.file, spec.Environment), "unsupported-deployment-form",
				"stage %s: a propagated or open environment with several services is not supported yet", s.Identifier)
			return false
		}
		f.targets = r.targets(s, spec.Environment, "")
	}
	return true
}

// targetsOnce reports an (environment, infrastructure) pair a stage deploys to twice.
func (r *resolver) targetsOnce(s *pipeline.Stage, targets []target) {
	seen := map[string]bool{}
	for _, t := range targets {
		if k := t.envRef + "/" + t.infraID; seen[k] {
			r.diags.Errorf(r.at(r.file, s.Deployment.Node), "duplicate-identifier", "stage %s deploys to environment %s, infrastructure %s twice", s.Identifier, t.envRef, t.infraID).
				SetHint("each (environment, infrastructure) pair may appear once")
		} else {
			seen[k] = true
		}
	}
}

// iterations lists the loop's items in iteration order (spec 21.2): target-major, unless
// services are serial and targets parallel. each is called with every item, the index of its
// service and its target.
func (f *fanout) iterations(each func(item map[string]any, si int, t target)) []any {
	var items []any
	add := func(si int, t target) {
		item := map[string]any{}
		if f.multiServices {
			item["serviceRef"] = f.serviceRefs[si]
		}
		if f.multiTargets {
			item["environmentRef"] = t.envRef
			item["identifier"] = t.infraID
		}
		items = append(items, item)
		each(item, si, t)
	}
	if !f.servicesParallel && f.targetsParallel && f.multiServices {
		for si := range f.services {
			for _, t := range f.targets {
				add(si, t)
			}
		}
	} else {
		for _, t := range f.targets {
			for si := range f.services {
				add(si, t)
			}
		}
	}
	return items
}

// concurrency is how many of the loop's items run at once (spec 21.2 table), before
// multiDeploymentConfig.maxConcurrency.
func (f *fanout) concurrency(items int) int {
	switch {
	case !f.multiServices:
		return map[bool]int{true: items, false: 1}[f.targetsParallel]
	case !f.multiTargets:
		return map[bool]int{true: items, false: 1}[f.servicesParallel]
	case f.servicesParallel && !f.targetsParallel:
		return len(f.services)
	case !f.servicesParallel && f.targetsParallel:
		return len(f.targets)
	case !f.servicesParallel && !f.targetsParallel:
		return 1
	}
	return items
}

// deployment is one iteration's deployment: a service to a target, with the environment's
// overrides for that service.
func deployment(typ string, sv *plan.Service, t target, stepManifests map[string]plan.Manifest) *plan.Deployment {
	envFile := t.env.Environment
	env := &plan.Environment{ID: envFile.Identifier, Name: envFile.Name, Description: envFile.Description, Tags: envFile.Tags,
		Type: envFile.Type, Variables: variables(envFile.Variables), GroupRef: t.groupRef}
	d := &plan.Deployment{Type: typ, Service: sv, Environment: env, Infra: t.infra}
	for _, o := range envFile.ServiceOverrides {
		if o.ServiceRef == d.Service.ID {
			d.Environment = withOverrides(d.Environment, variables(o.Variables))
		}
	}
	if d.Type == "" {
		d.Type = d.Service.Type
	}
	d.StepManifests = stepManifests
	return d
}

// literalList is a list section's elements; a list that is still a runtime input (plain
// validate) or an expression resolved at run time ends the resolution.
func (r *resolver) literalList(s *pipeline.Stage, n *yaml.Node, what string, section *yaml.Node) ([]*yaml.Node, bool) {
	switch {
	case n == nil:
		r.diags.Errorf(r.at(r.file, section), "missing-field", "stage %s: %s is missing", s.Identifier, what)
		return nil, false
	case n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value):
		return nil, false // open: a run supplies it (validate lists it)
	case n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "<+"):
		r.diags.Unsupportedf(r.at(r.file, n), "unsupported-deployment-form",
			"stage %s: %s as an expression resolved when the stage starts is not supported yet", s.Identifier, what).
			SetHint("give the list, or a runtime input (<+input>) that the run fills")
		return nil, false
	case n.Kind != yaml.SequenceNode:
		r.diags.Errorf(r.at(r.file, n), "type", "stage %s: %s must be a list", s.Identifier, what)
		return nil, false
	case len(n.Content) == 0:
		r.diags.Errorf(r.at(r.file, n), "empty", "stage %s: %s is empty", s.Identifier, what).
			SetHint("list at least one; a stage with nothing to deploy has no iterations")
		return nil, false
	}
	return n.Content, true
}

// parallel is a section's metadata.parallel: true when absent.
func (r *resolver) parallel(s *pipeline.Stage, m *parallelMeta, what string) bool {
	if m == nil || m.Parallel == "" {
		return true
	}
	switch m.Parallel {
	case "true":
		return true
	case "false":
		return false
	}
	at := r.at(r.file, pipeline.ValueAt(m.Node, "parallel"))
	if strings.Contains(m.Parallel, "<+") {
		r.diags.Unsupportedf(at, "unsupported-deployment-form", "stage %s: %s.metadata.parallel as an expression is not supported yet", s.Identifier, what).
			SetHint("write true or false, or a runtime input the run fills")
	} else {
		r.diags.Errorf(at, "type", "stage %s: %s.metadata.parallel must be true or false, got %q", s.Identifier, what, m.Parallel)
	}
	return true
}

// selectionFields are fields of an environment entry that would choose other targets than the
// ones listed; Gantry does not act on them yet, so ignoring them would deploy elsewhere.
var selectionFields = map[string]string{"filters": "tag filters selecting environments or infrastructures", "gitOpsClusters": "GitOps clusters"}

// unsupportedSelection reports an entry's selection fields; true when there was one.
func (r *resolver) unsupportedSelection(el *yaml.Node) bool {
	found := false
	for key, what := range selectionFields {
		if v := pipeline.Field(el, key); v != nil && !(v.Kind == yaml.SequenceNode && len(v.Content) == 0) && v.Tag != "!!null" {
			r.diags.Unsupportedf(r.at(r.file, pipeline.Key(el, key)), "unsupported-field", "`%s` asks for %s, which Gantry does not do yet", key, what).
				SetHint("list the environments and infrastructure definitions instead")
			found = true
		}
	}
	return found
}

// targets are the (environment, infrastructure) pairs of one environment entry.
func (r *resolver) targets(s *pipeline.Stage, el *yaml.Node, groupRef string) []target {
	if r.unsupportedSelection(el) {
		return nil
	}
	var se pipeline.DeploymentStageEnvironment
	(&pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &r.diags}).Decode(el, &se, "environment")
	if pipeline.IsRuntimeInput(se.EnvironmentRef) {
		return nil
	}
	f, _ := r.environmentByRef(el, se.EnvironmentRef)
	if f == nil {
		return nil
	}
	e := f.Environment
	envRef := se.EnvironmentRef
	if groupRef != "" && (strings.HasPrefix(groupRef, "org.") || strings.HasPrefix(groupRef, "account.")) && !strings.Contains(envRef, ".") {
		envRef = groupRef[:strings.IndexByte(groupRef, '.')+1] + envRef // the group's scope (spec 21.2)
	}
	var refs []pipeline.InfraRef
	infraList := pipeline.Field(el, "infrastructureDefinitions")
	switch {
	case se.DeployToAll == "true":
		refs = r.allInfras(e.Identifier)
		if len(refs) == 0 {
			r.diags.Errorf(r.at(r.file, pipeline.ValueAt(el, "deployToAll")), "empty", "environment %s has no infrastructure definitions to deploy to", e.Identifier)
		}
	case infraList != nil && infraList.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(infraList.Value):
		return nil // open: a run supplies it
	case len(se.InfrastructureDefinitions) > 0:
		refs = se.InfrastructureDefinitions
	case pipeline.Field(el, "infrastructureDefinition") != nil:
		var one pipeline.InfraRef
		(&pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &r.diags}).Decode(pipeline.Field(el, "infrastructureDefinition"), &one, "infrastructure definition")
		refs = []pipeline.InfraRef{one}
	default:
		r.diags.Errorf(r.at(r.file, el), "infrastructure", "stage %s: environment %s needs deployToAll: true or infrastructure definitions", s.Identifier, e.Identifier)
		return nil
	}
	var out []target
	for _, ref := range refs {
		if in := r.infraOf(e, ref); in != nil {
			out = append(out, target{envRef: envRef, infraID: ref.Identifier, env: f, infra: in, groupRef: groupRef})
		}
	}
	return out
}

// allInfras are an environment's infrastructure definitions by identifier (spec 21.2 Decision).
func (r *resolver) allInfras(env string) []pipeline.InfraRef {
	var ids []string
	for _, f := range r.c.Infras {
		if in := f.Infrastructure; pipeline.LocalRef(in.EnvironmentRef) == env {
			ids = append(ids, in.Identifier)
		}
	}
	sort.Strings(ids)
	out := make([]pipeline.InfraRef, len(ids))
	for i, id := range ids {
		out[i] = pipeline.InfraRef{Identifier: id}
	}
	return out
}

// groupTargets are the targets of an environment group: all its environments with all their
// infrastructures (deployToAll), or the environments listed.
func (r *resolver) groupTargets(s *pipeline.Stage, sec environmentGroupSection) []target {
	if r.unsupportedSelection(sec.Node) {
		return nil
	}
	at := r.at(r.file, pipeline.ValueAt(sec.Node, "envGroupRef"))
	if pipeline.IsRuntimeInput(sec.EnvGroupRef) {
		return nil
	}
	g, ok := r.c.EnvGroups[pipeline.LocalRef(sec.EnvGroupRef)]
	if !ok {
		r.missing(at, "environment group", sec.EnvGroupRef, "environmentGroup")
		return nil
	}
	var out []target
	if sec.DeployToAll == "true" {
		for _, id := range g.EnvGroup.EnvIdentifiers {
			el := &yaml.Node{Kind: yaml.MappingNode, Line: sec.Node.Line, Column: sec.Node.Column}
			el.Content = append(el.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: "environmentRef"}, &yaml.Node{Kind: yaml.ScalarNode, Value: id, Line: sec.Node.Line, Column: sec.Node.Column},
				&yaml.Node{Kind: yaml.ScalarNode, Value: "deployToAll"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "true", Line: sec.Node.Line, Column: sec.Node.Column})
			out = append(out, r.targets(s, el, sec.EnvGroupRef)...)
		}
		return out
	}
	list, ok := r.literalList(s, sec.Environments, "environmentGroup.environments", sec.Node)
	if !ok {
		return nil
	}
	for _, el := range list {
		ref := pipeline.Field(el, "environmentRef")
		if ref != nil && !slices.Contains(g.EnvGroup.EnvIdentifiers, pipeline.LocalRef(ref.Value)) {
			r.diags.Errorf(r.at(r.file, ref), "unknown-reference", "environment %s is not in environment group %s", ref.Value, g.EnvGroup.Identifier).
				SetHint("the group holds %s", strings.Join(g.EnvGroup.EnvIdentifiers, ", "))
			continue
		}
		out = append(out, r.targets(s, el, sec.EnvGroupRef)...)
	}
	return out
}
