package entities

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/plan"
)

// Resolve resolves every Deployment stage of a pipeline, by stage identifier. Problems are
// reported at the reference in the pipeline file (or in the entity file they are about).
func (c *Catalog) Resolve(src pipeline.Source, p *pipeline.Pipeline) (map[string]*plan.Deployment, diag.List) {
	out, _, d := c.ResolveAll(src, p)
	return out, d
}

// ResolveAll is Resolve with the multi-service and multi-environment stages, each resolved
// into its implicit loop (spec 21).
func (c *Catalog) ResolveAll(src pipeline.Source, p *pipeline.Pipeline) (map[string]*plan.Deployment, map[string]*Multi, diag.List) {
	r := &resolver{c: c, file: src.File, src: src, out: map[string]*plan.Deployment{}, multis: map[string]*Multi{}, seen: map[string]bool{}}
	for _, s := range p.AllStages() {
		if s.Deployment == nil {
			continue
		}
		r.stage(s)
	}
	var all []*plan.Deployment
	for _, id := range slices.Sorted(maps.Keys(r.out)) {
		all = append(all, r.out[id])
	}
	for _, id := range slices.Sorted(maps.Keys(r.multis)) {
		m := r.multis[id]
		for _, k := range slices.Sorted(maps.Keys(m.Deploys)) {
			all = append(all, m.Deploys[k])
		}
	}
	c.freezes(p, all)
	for _, s := range p.AllStages() {
		if d, ok := r.out[s.Identifier]; ok {
			r.stageMonitored(s, []*plan.Deployment{d})
		}
		if m, ok := r.multis[s.Identifier]; ok {
			var deploys []*plan.Deployment
			for _, k := range slices.Sorted(maps.Keys(m.Deploys)) {
				deploys = append(deploys, m.Deploys[k])
			}
			r.stageMonitored(s, deploys)
		}
	}
	return r.out, r.multis, r.diags
}

type resolver struct {
	c      *Catalog
	file   string          // the pipeline file
	src    pipeline.Source // positions in the pipeline file, templates' copied nodes included
	diags  diag.List
	out    map[string]*plan.Deployment
	multis map[string]*Multi // multi-service and multi-environment stages
	seen   map[string]bool   // Deployment stages visited, resolved or not
}

// missing reports a reference to an entity the catalog does not hold: unsupported when its file
// exists but uses what Gantry cannot run yet, otherwise missing.
func (r *resolver) missing(pos diag.Pos, kind, ref, rootKey string) {
	if f := r.c.Unsupported[kind+"/"+pipeline.LocalRef(ref)]; f != nil {
		r.diags.Unsupportedf(pos, "unsupported-entity", "%s %q (%s) uses what Gantry cannot run yet", kind, ref, f.Name).
			SetHint("the diagnostics of %s name what", f.Name)
		return
	}
	r.diags.Errorf(pos, "missing-entity", "%s %q is not defined", kind, ref).SetHint("%s", r.hint(rootKey))
}

func (r *resolver) hint(kind string) string {
	if len(r.c.Dirs) == 0 {
		return fmt.Sprintf("put a file whose root key is `%s:` beside this one, or pass its folder with --entities", kind)
	}
	return fmt.Sprintf("put a file whose root key is `%s:` in %s, or pass its folder with --entities", kind, strings.Join(r.c.Dirs, ", "))
}

func (r *resolver) stage(s *pipeline.Stage) {
	defer func() { r.seen[s.Identifier] = true }()
	spec := s.Deployment
	d := &plan.Deployment{Type: spec.DeploymentType}
	dec := &pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &diag.List{}} // shapes were checked by validate
	if spec.Services != nil || spec.Environments != nil || spec.EnvironmentGroup != nil {
		r.multi(s)
		return
	}
	if spec.ServiceConfig != nil || spec.Infrastructure != nil {
		r.legacy(s, d)
		return
	}
	if spec.Service != nil {
		var ss pipeline.DeploymentStageService
		dec.Decode(spec.Service, &ss, "stage service")
		switch {
		case ss.UseFromStage != nil:
			prev := r.useFromStage(s, ss.UseFromStage, "a service", func(d *plan.Deployment) bool { return d.Service != nil })
			if prev == nil {
				return
			}
			d.Service, d.ServiceFrom = prev.Service, ss.UseFromStage.Stage
		case ss.ServiceRef != "":
			d.Service = r.service(ss)
		}
	}
	if spec.Environment != nil {
		var se pipeline.DeploymentStageEnvironment
		dec.Decode(spec.Environment, &se, "stage environment")
		switch {
		case se.UseFromStage != nil:
			prev := r.useFromStage(s, se.UseFromStage, "an environment", func(d *plan.Deployment) bool { return d.Environment != nil })
			if prev == nil {
				return
			}
			d.Environment, d.Infra, d.EnvFrom = prev.Environment, prev.Infra, se.UseFromStage.Stage
		case se.EnvironmentRef != "":
			d.Environment, d.Infra = r.environment(s, se)
		}
	}
	if d.Service != nil && d.Environment != nil {
		// Service-specific overrides of this environment (spec 10.3 level 3).
		if f := r.c.Environments[d.Environment.ID]; f != nil {
			for _, o := range f.Environment.ServiceOverrides {
				if o.ServiceRef == d.Service.ID {
					d.Environment = withOverrides(d.Environment, variables(o.Variables))
				}
			}
		}
	}
	r.finish(s, d)
}

// finish records a resolved deployment; the deployment type defaults to the service's (the
// reference does not require `deploymentType`).
func (r *resolver) finish(s *pipeline.Stage, d *plan.Deployment) {
	if d.Service != nil && d.Environment != nil && d.Infra != nil {
		if d.Type == "" {
			d.Type = d.Service.Type
		}
		d.StepManifests = r.stepManifests(s)
		r.sameTemplate(s, r.c.Services[d.Service.ID], d)
		if d.Type != d.Service.Type && !strings.Contains(d.Type, "<+") {
			r.diags.Errorf(r.at(r.file, pipeline.ValueAt(s.Spec, "deploymentType")), "deployment-type",
				"stage %s deploys %s services; service %s is a %s service", s.Identifier, d.Type, d.Service.ID, d.Service.Type).
				SetHint("use `deploymentType: %s`, or a %s service", d.Service.Type, d.Type)
			return
		}
		r.out[s.Identifier] = d
	}
}

func withOverrides(e *plan.Environment, vars []plan.Variable) *plan.Environment {
	c := *e
	c.ServiceOverrides = vars
	return &c
}

func variables(vs []pipeline.Variable) []plan.Variable {
	var out []plan.Variable
	for _, v := range vs {
		out = append(out, plan.Variable{Name: v.Name, Type: v.Type, Value: v.Value})
	}
	return out
}

// CheckService reads a service file's manifest and values files and parses the templates, as
// a run would.
func CheckService(f *pipeline.File) diag.List {
	r := &resolver{c: &Catalog{Services: map[string]*pipeline.File{f.Service.Identifier: f}}, file: f.Name, src: f.Source(), seen: map[string]bool{}}
	r.service(pipeline.DeploymentStageService{ServiceRef: f.Service.Identifier})
	return r.diags
}

func (r *resolver) service(ss pipeline.DeploymentStageService) *plan.Service {
	if pipeline.IsRuntimeInput(ss.ServiceRef) {
		return nil // an open runtime input
	}
	f, ok := r.c.Services[pipeline.LocalRef(ss.ServiceRef)]
	if !ok {
		r.missing(r.at(r.file, pipeline.ValueAt(ss.Node, "serviceRef")), "service", ss.ServiceRef, "service")
		return nil
	}
	if f = r.withInputs(f, "service", ss.ServiceInputs, "serviceInputs"); f == nil {
		return nil
	}
	return r.buildService(f)
}

// buildService reads a service's manifests and values files (relative to its file) into the
// plan.
func (r *resolver) buildService(f *pipeline.File) *plan.Service {
	sv := f.Service
	if sv.ServiceDefinition == nil || sv.ServiceDefinition.Spec == nil {
		// The reference lets a service be declared before what it deploys; a stage cannot
		// deploy it. Like a missing service, a plain validate says so as a warning.
		r.diags.Errorf(r.at(f.Name, sv.Node), "missing-entity", "service %s has no serviceDefinition with a spec, so there is nothing to deploy", sv.Identifier).
			SetHint("give the service `serviceDefinition: {type: Kubernetes, spec: {manifests: [...]}}`")
		return nil
	}
	out := &plan.Service{ID: sv.Identifier, Name: sv.Name, Description: sv.Description, Tags: sv.Tags, Type: sv.ServiceDefinition.Type}
	spec := sv.ServiceDefinition.Spec
	out.Variables = variables(spec.Variables)
	for _, me := range spec.Manifests {
		m := me.Manifest
		if m == nil || m.Spec == nil || m.Spec.Store == nil {
			continue // a manifest without its spec or store, reported when the service was checked
		}
		pm := plan.Manifest{ID: m.Identifier, Type: m.Type, SkipVersioning: m.Spec.SkipResourceVersioning == "true"}
		if m.Type == "Kustomize" || m.Type == "HelmChart" {
			if r.folderManifest(f.Name, sv.Identifier, m, &pm) {
				out.Manifests = append(out.Manifests, pm)
				if patches := r.patchesManifest(f.Name, sv.Identifier, m); patches != nil {
					out.Manifests = append(out.Manifests, *patches)
				}
			}
			continue
		}
		if t := m.Spec.Store.Type; t == "Http" || t == "OciHelmChart" {
			r.diags.Unsupportedf(r.at(f.Name, pipeline.ValueAt(m.Spec.Store.Node, "type")), "unsupported-manifest-store",
				"manifest %s: a %s store holds Helm charts; Gantry reads it for HelmChart manifests only", m.Identifier, t).
				SetHint("type: HelmChart, with chartName and chartVersion")
			continue
		}
		what := fmt.Sprintf("service %s, manifest %s", sv.Identifier, m.Identifier)
		if m.Type == "OpenshiftTemplate" {
			r.openshiftTemplate(f.Name, what, m, &pm)
		} else {
			r.filesManifest(f.Name, what, m.Spec, &pm)
		}
		out.Manifests = append(out.Manifests, pm)
	}
	if out.Type == "NativeHelm" {
		r.nativeHelmManifests(f.Name, sv.Identifier, spec)
	}
	r.patchesWithoutKustomize(f.Name, sv.Identifier, spec)
	r.paramsWithoutTemplate(f.Name, sv.Identifier, spec)
	r.checkOpenshift(f.Name, sv.Identifier, spec, out.Manifests)
	if out.Type == "AwsLambda" {
		r.lambdaManifests(f.Name, sv.Identifier, spec)
	}
	if out.Type == "ECS" {
		r.checkManifests(f.Name, sv.Identifier, spec, ecsManifests)
	}
	if out.Type == "Asg" {
		if r.checkManifests(f.Name, sv.Identifier, spec, asgManifests); spec.UserData != nil && spec.UserData.Store != nil {
			pm := plan.Manifest{ID: "userData", Type: "AsgUserData"}
			r.filesManifest(f.Name, fmt.Sprintf("service %s, userData", sv.Identifier), spec.UserData, &pm)
			out.Manifests = append(out.Manifests, pm)
		}
	}
	out.ConfigFiles, out.ConfigStores = r.configFiles(f.Name, sv.Identifier, spec.ConfigFiles)
	if a := spec.Artifacts; a != nil && a.Primary != nil {
		if src := a.Primary.Selected(); src != nil && src.Spec != nil {
			out.Artifact = r.artifact(f.Name, src)
		}
	}
	return out
}

// customArtifactScript is a CustomArtifact source's listing script and what it picks.
func customArtifactScript(s *pipeline.ArtifactSourceSpec) *plan.CustomArtifactScript {
	f := s.Scripts.FetchAllArtifacts
	out := &plan.CustomArtifactScript{ArrayPath: f.ArtifactsArrayPath, VersionPath: f.VersionPath, Version: s.Version, VersionRegex: s.VersionRegex}
	if f.Spec != nil && f.Spec.Source != nil && f.Spec.Source.Spec != nil {
		out.Script = f.Spec.Source.Spec.Script
	}
	for _, v := range s.Inputs {
		out.Inputs = append(out.Inputs, plan.Variable{Name: v.Name, Type: v.Type, Value: v.Value})
	}
	for _, a := range f.Attributes {
		out.Attributes = append(out.Attributes, plan.InstanceAttribute{Name: a.Name, JSONPath: a.Value})
	}
	return out
}

// artifact resolves the primary artifact source a service deploys, declared in file.
func (r *resolver) artifact(file string, src *pipeline.ArtifactSource) *plan.Artifact {
	out := &plan.Artifact{ID: src.Identifier, Type: src.Type, ConnectorRef: src.Spec.ConnectorRef,
		Registry: src.Spec.Registry, ImagePath: src.Spec.ImagePath, Tag: src.Spec.Tag, TagRegex: src.Spec.TagRegex, Digest: src.Spec.Digest}
	if src.Type == "CustomArtifact" {
		// A custom source's version is the artifact itself: the image deployed.
		out.ImagePath, out.Tag = src.Spec.Version, ""
		if sc := src.Spec.Scripts; sc != nil && sc.FetchAllArtifacts != nil {
			out.Custom = customArtifactScript(src.Spec)
		}
		return out
	}
	if src.Type == "DockerRegistry" && src.Spec.ConnectorRef != "" {
		out.Connector = r.registryConnector(file, src.Spec)
	}
	if src.Type == "AmazonMachineImage" {
		if k, ok := r.awsConnector(file, src.Spec.Node, src.Spec.ConnectorRef, "an AmazonMachineImage artifact source"); ok {
			out.Ami = &plan.AmiArtifact{Connector: k, Region: src.Spec.Region, Version: src.Spec.Version, VersionRegex: src.Spec.VersionRegex,
				Tags: nameValues(src.Spec.Tags), Filters: nameValues(src.Spec.Filters)}
		}
		return out
	}
	if src.Type == "AmazonS3" {
		if k, ok := r.awsConnector(file, src.Spec.Node, src.Spec.ConnectorRef, "an AmazonS3 artifact source"); ok {
			out.S3 = &plan.S3Artifact{Connector: k, Bucket: src.Spec.BucketName, Region: src.Spec.Region,
				FilePath: src.Spec.FilePath, FilePathRegex: src.Spec.FilePathRegex}
		}
		return out
	}
	if out.Tag == "" && out.TagRegex == "" && out.Digest == "" && out.Connector == nil {
		// The latest tag is found by listing the registry's tags, through its connector.
		r.diags.Unsupportedf(r.at(file, src.Spec.Node), "unsupported-latest-tag",
			"artifact source %s names no tag: Gantry deploys the latest tag only of a DockerRegistry source whose connector it can reach", src.Identifier).
			SetHint("give `tag:` (or `tagRegex:`), or a DockerRegistry connector in `connectorRef`")
	}
	return out
}

// environmentByRef finds the environment file a reference names (environmentRef of obj), with
// the stage's environmentInputs of obj filled in.
func (r *resolver) environmentByRef(obj *yaml.Node, ref string) (*pipeline.File, *plan.Environment) {
	f, ok := r.c.Environments[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(r.at(r.file, pipeline.ValueAt(obj, "environmentRef")), "environment", ref, "environment")
		return nil, nil
	}
	if f = r.withInputs(f, "environment", pipeline.Field(obj, "environmentInputs"), "environmentInputs"); f == nil {
		return nil, nil
	}
	e := f.Environment
	return f, &plan.Environment{ID: e.Identifier, Name: e.Name, Description: e.Description, Tags: e.Tags, Type: e.Type, Variables: variables(e.Variables)}
}

func (r *resolver) environment(s *pipeline.Stage, se pipeline.DeploymentStageEnvironment) (*plan.Environment, *plan.Infrastructure) {
	if pipeline.IsRuntimeInput(se.EnvironmentRef) {
		return nil, nil // an open runtime input: a run supplies it (validate lists it as open)
	}
	if r.unsupportedSelection(se.Node) {
		return nil, nil
	}
	f, env := r.environmentByRef(se.Node, se.EnvironmentRef)
	if env == nil {
		return nil, nil
	}
	e := f.Environment
	if n := pipeline.ValueAt(se.Node, "infrastructureDefinitions"); n != nil && n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value) {
		return env, nil // an open runtime input
	}
	if se.DeployToAll == "true" || len(se.InfrastructureDefinitions) != 1 {
		r.diags.Errorf(r.at(r.file, se.Node), "infrastructure", "stage %s must deploy to exactly one infrastructure definition", s.Identifier).
			SetHint("list one under `infrastructureDefinitions`; to deploy to several, loop the stage with a matrix strategy")
		return env, nil
	}
	return env, r.infraOf(e, se.InfrastructureDefinitions[0])
}

// infraOf resolves an infrastructure definition of environment e.
func (r *resolver) infraOf(e *pipeline.Environment, ref pipeline.InfraRef) *plan.Infrastructure {
	at := r.at(r.file, pipeline.ValueAt(ref.Node, "identifier"))
	inf, ok := r.c.Infras[InfraKey(e.Identifier, ref.Identifier)]
	if !ok {
		for _, other := range r.c.Infras {
			if in := other.Infrastructure; in.Identifier == pipeline.LocalRef(ref.Identifier) {
				r.diags.Errorf(at, "unknown-reference", "infrastructure definition %q belongs to environment %q, not %q", ref.Identifier, in.EnvironmentRef, e.Identifier).
					SetHint("pick an infrastructure definition of environment %s", e.Identifier)
				return nil
			}
		}
		r.missing(at, "infrastructure definition", InfraKey(e.Identifier, ref.Identifier), "infrastructureDefinition")
		return nil
	}
	if inf = r.withInputs(inf, "infrastructureDefinition", ref.Inputs, "infrastructure inputs"); inf == nil {
		return nil
	}
	return r.infrastructure(inf.Name, inf.Infrastructure)
}

// infrastructure resolves an infrastructure definition and its connector: a KubernetesDirect
// cluster, or an AwsLambda account.
func (r *resolver) infrastructure(file string, in *pipeline.Infrastructure) *plan.Infrastructure {
	infra := &plan.Infrastructure{ID: in.Identifier, Name: in.Name, Tags: in.Tags, Namespace: in.Spec.Namespace, ReleaseName: in.Spec.ReleaseName,
		AllowSimultaneous: in.AllowSimultaneousDeployments == "true"}
	if in.Type == "CustomDeployment" {
		if infra.Type, infra.Custom = in.Type, r.customInfra(file, in); infra.Custom == nil {
			return nil
		}
		return infra
	}
	if in.Type == "Pdc" {
		if infra.Type, infra.Ssh = in.Type, r.pdcInfra(file, in); infra.Ssh == nil {
			return nil
		}
		return infra
	}
	if in.Type == "SshWinRmAws" {
		if infra.Type, infra.Ssh = in.Type, r.awsHostsInfra(file, in); infra.Ssh == nil {
			return nil
		}
		return infra
	}
	if in.Type == "AwsLambda" || in.Type == "ECS" || in.Type == "Asg" {
		k, ok := r.awsConnector(file, in.Spec.Node, in.Spec.ConnectorRef, "an "+in.Type+" infrastructure")
		if !ok {
			return nil
		}
		infra.Type, infra.Aws, infra.Region, infra.Cluster, infra.BaseAsgName = in.Type, &k, in.Spec.Region, in.Spec.Cluster, in.Spec.BaseAsgName
		return infra
	}
	k, ok := r.clusterConnector(file, in.Spec.Node, in.Spec.ConnectorRef, "infrastructure "+in.Identifier+": ", "a KubernetesDirect infrastructure")
	if !ok {
		return nil
	}
	infra.Connector = k
	return infra
}

// useFromStage is the deployment of the earlier stage a `useFromStage` names, when it has what
// is wanted (what: "a service"); nil, reported, otherwise. A stage whose own resolution failed is
// reported there, not again.
func (r *resolver) useFromStage(s *pipeline.Stage, u *pipeline.UseFromStage, what string, has func(*plan.Deployment) bool) *plan.Deployment {
	prev, ok := r.out[u.Stage]
	if !ok && r.seen[u.Stage] {
		return nil
	}
	if !ok || !has(prev) {
		r.diags.Errorf(r.at(r.file, u.Node), "unknown-reference",
			"stage %s: useFromStage %q is not an earlier Deployment stage with %s", s.Identifier, u.Stage, what).
			SetHint("name a Deployment stage that comes before this one")
		return nil
	}
	return prev
}

// at is the position of a node of file: the pipeline's (where nodes copied from templates keep
// their own files) or an entity file's.
func (r *resolver) at(file string, n *yaml.Node) diag.Pos {
	if file == r.file {
		return r.src.Pos(n)
	}
	return pipeline.NodePos(file, n)
}

func nameValues(in []pipeline.NameValue) []plan.NameValue {
	var out []plan.NameValue
	for _, nv := range in {
		out = append(out, plan.NameValue{Name: nv.Name, Value: nv.Value})
	}
	return out
}
