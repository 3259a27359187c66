// Package entities loads the CD entity files (services, environments, infrastructure
// definitions, connectors) from directories and resolves a pipeline's Deployment stages against
// them into plan.Deployment values, manifests included (spec 15.1).
package entities

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/plan"
)

// Catalog is the entities found in a set of directories.
type Catalog struct {
	Services     map[string]*pipeline.File
	Environments map[string]*pipeline.File
	Infras       map[string]*pipeline.File // by environment and identifier: "prod/eks_eu"
	EnvGroups    map[string]*pipeline.File
	Connectors   map[string]*pipeline.File
	// Unsupported are valid entity files Gantry cannot run yet, by kind and identifier
	// ("service/web"): a reference to one is unsupported, not missing.
	Unsupported map[string]*pipeline.File
	Sources     diag.Sources
	Dirs        []string
}

// IsEntityFile reports whether a YAML text's root key is one of the entity kinds, without
// parsing it: manifest folders hold templates that are not YAML until rendered.
func IsEntityFile(src []byte) bool {
	switch pipeline.RootKey(src) {
	case "service", "environment", "infrastructureDefinition", "connector", "environmentGroup":
		return true
	}
	return false
}

// Load reads every *.yaml and *.yml file directly in dirs whose root is an entity, parses and
// validates it. Other files are ignored. An identifier defined twice is an error.
func Load(dirs []string) (*Catalog, diag.List) {
	c := &Catalog{Services: map[string]*pipeline.File{}, Environments: map[string]*pipeline.File{},
		Infras: map[string]*pipeline.File{}, Connectors: map[string]*pipeline.File{}, Unsupported: map[string]*pipeline.File{},
		EnvGroups: map[string]*pipeline.File{},
		Sources:   diag.Sources{}, Dirs: dirs}
	var diags diag.List
	seen := map[string]bool{}
	for _, dir := range dirs {
		// The pipeline's own folder is always read; naming it again (--entities .) is no error.
		if abs, err := filepath.Abs(dir); err == nil {
			if seen[abs] {
				continue
			}
			seen[abs] = true
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
		sort.Strings(names)
		for _, name := range names {
			if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil || !IsEntityFile(src) {
				continue
			}
			c.Sources[name] = src
			f, d := pipeline.Parse(name, src)
			diags.Add(d...)
			if f.Root == nil || len(d.Invalid()) > 0 {
				continue
			}
			_, vd := validate.File(f)
			diags.Add(vd...)
			if len(d.UnsupportedOnly())+len(vd.UnsupportedOnly()) > 0 {
				if kind, id := entityKey(f); kind != "" {
					c.Unsupported[kind+"/"+id] = f
				}
				continue
			}
			c.add(f, &diags)
		}
	}
	return c, diags
}

// entityKey is the kind ("service", "environment", "infrastructure definition", "connector")
// and identifier of an entity file.
func entityKey(f *pipeline.File) (kind, id string) {
	switch {
	case f.Service != nil:
		return "service", f.Service.Identifier
	case f.Environment != nil:
		return "environment", f.Environment.Identifier
	case f.Infrastructure != nil:
		// Infrastructure identifiers are unique within their environment.
		return "infrastructure definition", InfraKey(f.Infrastructure.EnvironmentRef, f.Infrastructure.Identifier)
	case f.EnvGroup != nil:
		return "environment group", f.EnvGroup.Identifier
	case f.Connector != nil:
		return "connector", f.Connector.Identifier
	}
	return "", ""
}

func (c *Catalog) add(f *pipeline.File, diags *diag.List) {
	what, id := entityKey(f)
	m := map[string]map[string]*pipeline.File{"service": c.Services, "environment": c.Environments,
		"infrastructure definition": c.Infras, "connector": c.Connectors, "environment group": c.EnvGroups}[what]
	if m == nil {
		return
	}
	if prev, ok := m[id]; ok {
		diags.Errorf(pipeline.NodePos(f.Name, f.Root), "duplicate-identifier", "%s %q is defined twice", what, id).
			SetHint("it is also defined in %s; identifiers of one kind must be unique across the entity directories", prev.Name)
		return
	}
	m[id] = f
}

// clusterConnector resolves a K8sCluster connector reference found at obj's connectorRef.
func (r *resolver) clusterConnector(file string, obj *yaml.Node, ref, where, needs string) (plan.Connector, bool) {
	pos := pipeline.NodePos(file, pipeline.ValueAt(obj, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return plan.Connector{}, false
	}
	k := cf.Connector
	if k.K8s == nil || k.K8s.Credential == nil {
		r.diags.Errorf(pos, "connector", "%sconnector %s is a %s connector; %s needs a K8sCluster connector", where, k.Identifier, k.Type, needs)
		return plan.Connector{}, false
	}
	cr := k.K8s.Credential
	out := plan.Connector{ID: k.Identifier, Name: k.Name, Type: cr.Type}
	if s := cr.Spec; s != nil {
		out.MasterURL = s.MasterURL
		out.InsecureSkipTLSVerify = s.InsecureSkipTLSVerify == "true"
		out.Kubeconfig, out.Context = s.Path, s.Context
		if s.Auth != nil && s.Auth.Spec != nil {
			out.TokenRef, out.CACertRef = s.Auth.Spec.ServiceAccountTokenRef, s.Auth.Spec.CACertRef
		}
	}
	return out, true
}

// Resolve resolves every Deployment stage of a pipeline, by stage identifier. Problems are
// reported at the reference in the pipeline file (or in the entity file they are about).
func (c *Catalog) Resolve(file string, p *pipeline.Pipeline) (map[string]*plan.Deployment, diag.List) {
	out, _, d := c.ResolveAll(file, p)
	return out, d
}

// ResolveAll is Resolve with the multi-service and multi-environment stages, each resolved
// into its implicit loop (spec 21).
func (c *Catalog) ResolveAll(file string, p *pipeline.Pipeline) (map[string]*plan.Deployment, map[string]*Multi, diag.List) {
	r := &resolver{c: c, file: file, out: map[string]*plan.Deployment{}, multis: map[string]*Multi{}, seen: map[string]bool{}}
	for _, s := range p.AllStages() {
		if s.Type != "Deployment" || s.StageSpec == nil {
			continue
		}
		r.stage(s)
	}
	return r.out, r.multis, r.diags
}

type resolver struct {
	c      *Catalog
	file   string
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
	spec := s.StageSpec
	d := &plan.Deployment{Type: spec.DeploymentType}
	dec := &pipeline.Decoder{File: r.file, Diags: &diag.List{}} // shapes were checked by validate
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
		if d.Type != d.Service.Type && !strings.Contains(d.Type, "<+") {
			r.diags.Errorf(pipeline.NodePos(r.file, pipeline.ValueAt(s.Spec, "deploymentType")), "deployment-type",
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
	r := &resolver{c: &Catalog{Services: map[string]*pipeline.File{f.Service.Identifier: f}}, file: f.Name, seen: map[string]bool{}}
	r.service(pipeline.DeploymentStageService{ServiceRef: f.Service.Identifier})
	return r.diags
}

func (r *resolver) service(ss pipeline.DeploymentStageService) *plan.Service {
	if pipeline.IsRuntimeInput(ss.ServiceRef) {
		return nil // an open runtime input
	}
	f, ok := r.c.Services[pipeline.LocalRef(ss.ServiceRef)]
	if !ok {
		r.missing(pipeline.NodePos(r.file, pipeline.ValueAt(ss.Node, "serviceRef")), "service", ss.ServiceRef, "service")
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
		r.diags.Errorf(pipeline.NodePos(f.Name, sv.Node), "missing-entity", "service %s has no serviceDefinition with a spec, so there is nothing to deploy", sv.Identifier).
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
			}
			continue
		}
		if t := m.Spec.Store.Type; t == "Http" || t == "OciHelmChart" {
			r.diags.Unsupportedf(pipeline.NodePos(f.Name, pipeline.ValueAt(m.Spec.Store.Node, "type")), "unsupported-manifest-store",
				"manifest %s: a %s store holds Helm charts; Gantry reads it for HelmChart manifests only", m.Identifier, t).
				SetHint("type: HelmChart, with chartName and chartVersion")
			continue
		}
		r.filesManifest(f.Name, fmt.Sprintf("service %s, manifest %s", sv.Identifier, m.Identifier), m.Spec, &pm)
		out.Manifests = append(out.Manifests, pm)
	}
	if out.Type == "NativeHelm" {
		r.nativeHelmManifests(f.Name, sv.Identifier, spec)
	}
	if out.Type == "AwsLambda" {
		r.lambdaManifests(f.Name, sv.Identifier, spec)
	}
	if out.Type == "ECS" {
		r.ecsManifests(f.Name, sv.Identifier, spec)
	}
	if a := spec.Artifacts; a != nil && a.Primary != nil {
		if src := a.Primary.Selected(); src != nil && src.Spec != nil {
			out.Artifact = r.artifact(f.Name, src)
		}
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
		return out
	}
	if src.Type == "DockerRegistry" && src.Spec.ConnectorRef != "" {
		out.Connector = r.registryConnector(file, src.Spec)
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
		r.diags.Unsupportedf(pipeline.NodePos(file, src.Spec.Node), "unsupported-latest-tag",
			"artifact source %s names no tag: Gantry deploys the latest tag only of a DockerRegistry source whose connector it can reach", src.Identifier).
			SetHint("give `tag:` (or `tagRegex:`), or a DockerRegistry connector in `connectorRef`")
	}
	return out
}

// filesManifest resolves a manifest of files (K8sManifest, Values, a K8sApply step's
// manifestSource) declared in file: a Git store, fetched when the stage starts, or Local files
// read now, their templates parsed.
func (r *resolver) filesManifest(file, what string, spec *pipeline.ManifestSpec, pm *plan.Manifest) {
	if spec.Store.Type == "S3" {
		pm.S3 = r.s3Store(file, spec)
		return
	}
	if spec.Store.Type != "Local" {
		pm.Store = r.gitStore(file, spec)
		return
	}
	base := filepath.Dir(file)
	for _, p := range spec.Store.Spec.Paths {
		files, err := readTree(base, p)
		if err != nil {
			r.diags.Errorf(pipeline.NodePos(file, spec.Store.Spec.Node), "manifest", "%s: %v", what, err).
				SetHint("paths are relative to %s", base)
			continue
		}
		for _, mf := range files {
			if err := manifests.Check(manifests.File{Path: mf.Path, Text: mf.Text}); err != nil {
				r.diags.Errorf(templatePos(base, mf.Path, err), "manifest-template", "%v", err).
					SetHint("manifests are Go templates over .Values; check the braces and function names")
			}
		}
		pm.Files = append(pm.Files, files...)
	}
	for _, p := range spec.ValuesPaths {
		files, err := readTree(base, p)
		if err != nil {
			r.diags.Errorf(pipeline.NodePos(file, pipeline.ValueAt(spec.Node, "valuesPaths")), "manifest", "%s: values %v", what, err).
				SetHint("paths are relative to %s", base)
			continue
		}
		pm.Values = append(pm.Values, files...)
	}
}

// stepManifests resolves the manifestSource of the stage's K8sApply steps, keyed by the step's
// path below the stage (spec.execution.steps...); Local paths are relative to the pipeline.
func (r *resolver) stepManifests(s *pipeline.Stage) map[string]plan.Manifest {
	if s.StageSpec == nil || s.StageSpec.Execution == nil {
		return nil
	}
	out := map[string]plan.Manifest{}
	visit := func(v pipeline.StepVisit) {
		if v.Step == nil || v.Step.Spec == nil {
			return
		}
		e, _ := steps.Lookup(v.Step.Type)
		if e.New == nil {
			return
		}
		switch sp := e.New().(type) {
		case *steps.EcsRunTask:
			(&pipeline.Decoder{File: r.file, Diags: &diag.List{}}).Decode(v.Step.Spec, sp, "EcsRunTask spec") // checked by validate
			if pm, ok := r.runTaskFiles(s, v.Step, sp); ok {
				out[strings.Join(v.Path, ".")] = pm
			}
		case *steps.K8sApply:
			(&pipeline.Decoder{File: r.file, Diags: &diag.List{}}).Decode(v.Step.Spec, sp, "K8sApply spec") // checked by validate
			r.applyManifest(s, v, sp, out)
		}
	}
	ex := s.StageSpec.Execution
	pipeline.WalkSteps(ex.Steps, false, []string{"spec", "execution", "steps"}, nil, visit)
	pipeline.WalkSteps(ex.RollbackSteps, true, []string{"spec", "execution", "rollbackSteps"}, nil, visit)
	if len(out) == 0 {
		return nil
	}
	return out
}

// applyManifest resolves a K8sApply step's own manifestSource into out, keyed by its path.
func (r *resolver) applyManifest(s *pipeline.Stage, v pipeline.StepVisit, sp *steps.K8sApply, out map[string]plan.Manifest) {
	src := sp.ManifestSource
	if src == nil || src.Spec == nil || src.Spec.Store == nil || src.Spec.Store.Spec == nil {
		return
	}
	pm := plan.Manifest{ID: v.Step.Identifier, Type: "K8sManifest", SkipVersioning: src.Spec.SkipResourceVersioning == "true"}
	r.filesManifest(r.file, fmt.Sprintf("stage %s, step %s, manifestSource", s.Identifier, v.Step.Identifier), src.Spec, &pm)
	out[strings.Join(v.Path, ".")] = pm
}

// runTaskFiles reads an EcsRunTask step's task definition and RunTask request definition
// (Local stores, relative to the pipeline) into a manifest: Files hold the task definition,
// Values the request.
func (r *resolver) runTaskFiles(s *pipeline.Stage, st *pipeline.Step, sp *steps.EcsRunTask) (plan.Manifest, bool) {
	pm := plan.Manifest{ID: st.Identifier, Type: "EcsRunTask"}
	read := func(store *pipeline.ManifestStore, field string) []plan.File {
		if store == nil || store.Spec == nil {
			return nil
		}
		if store.Type != "Local" {
			r.diags.Unsupportedf(pipeline.NodePos(r.file, pipeline.ValueAt(store.Node, "type")), "unsupported-manifest-store",
				"step %s: Gantry reads an EcsRunTask %s from files beside the pipeline (`type: Local`) only yet, not from %s stores", st.Identifier, field, store.Type)
			return nil
		}
		var tmp plan.Manifest
		r.filesManifest(r.file, fmt.Sprintf("stage %s, step %s, %s", s.Identifier, st.Identifier, field), &pipeline.ManifestSpec{Node: store.Node, Store: store}, &tmp)
		return tmp.Files
	}
	pm.Files = read(sp.TaskDefinition, "taskDefinition")
	pm.Values = read(sp.RunTaskRequestDefinition, "runTaskRequestDefinition")
	return pm, len(pm.Files)+len(pm.Values) > 0
}

// nativeHelmManifests checks that a NativeHelm service deploys one HelmChart (with Values
// manifests as overrides), as the reference requires.
func (r *resolver) nativeHelmManifests(file, service string, spec *pipeline.ServiceSpec) {
	charts := 0
	for _, me := range spec.Manifests {
		switch m := me.Manifest; m.Type {
		case "HelmChart":
			if charts++; charts == 2 {
				r.diags.Errorf(pipeline.NodePos(file, m.Node), "manifest", "NativeHelm service %s has more than one HelmChart manifest; a Helm release deploys one chart", service)
			}
		case "Values":
		default:
			r.diags.Unsupportedf(pipeline.NodePos(file, pipeline.ValueAt(m.Node, "type")), "unsupported-manifest-type",
				"NativeHelm service %s: Gantry deploys a HelmChart manifest and Values overrides as a Helm release, not %s manifests", service, m.Type).
				SetHint("use `type: Kubernetes` for %s manifests", m.Type)
		}
	}
	if charts == 0 {
		r.diags.Errorf(pipeline.NodePos(file, spec.Node), "manifest", "NativeHelm service %s has no HelmChart manifest", service).
			SetHint("add a manifest of `type: HelmChart`")
	}
}

// lambdaManifests checks that an AwsLambda service defines its function with one
// AwsLambdaFunctionDefinition manifest and deploys a zip from S3 or an image.
func (r *resolver) lambdaManifests(file, service string, spec *pipeline.ServiceSpec) {
	defs := 0
	for _, me := range spec.Manifests {
		if m := me.Manifest; m.Type == "AwsLambdaFunctionDefinition" {
			if defs++; defs == 2 {
				r.diags.Errorf(pipeline.NodePos(file, m.Node), "manifest", "AwsLambda service %s has more than one AwsLambdaFunctionDefinition manifest; a service deploys one function", service)
			}
		} else if m.Type != "AwsLambdaFunctionAliasDefinition" { // that one is reported unsupported
			r.diags.Errorf(pipeline.NodePos(file, pipeline.ValueAt(m.Node, "type")), "manifest",
				"AwsLambda service %s: a %s manifest deploys to Kubernetes, not to Lambda", service, m.Type).
				SetHint("an AwsLambda service has one manifest of `type: AwsLambdaFunctionDefinition`")
		}
	}
	if defs == 0 {
		r.diags.Errorf(pipeline.NodePos(file, spec.Node), "manifest", "AwsLambda service %s has no AwsLambdaFunctionDefinition manifest", service).
			SetHint("add a manifest of `type: AwsLambdaFunctionDefinition`: the function's name, runtime, handler, role and settings, in JSON or YAML")
	}
	if spec.Artifacts == nil || spec.Artifacts.Primary == nil {
		r.diags.Errorf(pipeline.NodePos(file, spec.Node), "artifact", "AwsLambda service %s has no primary artifact: the function's code", service).
			SetHint("an AmazonS3 source (a .zip) or an image (Ecr, DockerRegistry)")
	}
}

// ecsManifests checks that an ECS service has one task definition and one service definition,
// and at most scaling definitions beside them.
func (r *resolver) ecsManifests(file, service string, spec *pipeline.ServiceSpec) {
	count := map[string]int{}
	for _, me := range spec.Manifests {
		m := me.Manifest
		switch m.Type {
		case "EcsTaskDefinition", "EcsServiceDefinition", "EcsScalableTargetDefinition", "EcsScalingPolicyDefinition":
			if count[m.Type]++; count[m.Type] == 2 && (m.Type == "EcsTaskDefinition" || m.Type == "EcsServiceDefinition") {
				r.diags.Errorf(pipeline.NodePos(file, m.Node), "manifest", "ECS service %s has more than one %s manifest; a service deploys one", service, m.Type)
			}
		default:
			r.diags.Errorf(pipeline.NodePos(file, pipeline.ValueAt(m.Node, "type")), "manifest",
				"ECS service %s: a %s manifest does not deploy to ECS", service, m.Type).
				SetHint("an ECS service has an EcsTaskDefinition and an EcsServiceDefinition, and optionally EcsScalableTargetDefinition and EcsScalingPolicyDefinition manifests")
		}
	}
	for _, t := range []string{"EcsTaskDefinition", "EcsServiceDefinition"} {
		if count[t] == 0 {
			r.diags.Errorf(pipeline.NodePos(file, spec.Node), "manifest", "ECS service %s has no %s manifest", service, t).
				SetHint("add a manifest of `type: %s` (JSON or YAML, in the reference's form)", t)
		}
	}
}

// registryConnector resolves a DockerRegistry artifact source's connector; the worker resolves
// the tag to a digest through it when the stage starts.
func (r *resolver) registryConnector(file string, s *pipeline.ArtifactSourceSpec) *plan.RegistryConnector {
	pos := pipeline.NodePos(file, pipeline.ValueAt(s.Node, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(s.ConnectorRef)]
	if !ok {
		// Without the connector the image is deployed by its tag, as before registries were read.
		r.diags.Warnf(pos, "unresolved-artifact", "connector %q is not defined: the image is deployed by its tag as written, not resolved to a digest", s.ConnectorRef).
			SetHint("%s", r.hint("connector"))
		return nil
	}
	k := cf.Connector
	if k.Docker == nil {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; a DockerRegistry artifact source needs a DockerRegistry connector", k.Identifier, k.Type)
		return nil
	}
	return dockerRegistry(k)
}

// gitStore resolves a manifest's Git store and its connector; the worker fetches the files
// when the stage starts.
func (r *resolver) gitStore(file string, ms *pipeline.ManifestSpec) *plan.GitStore {
	st := ms.Store
	s := st.Spec
	gc, ok := r.gitConnector(file, s.Node, s.ConnectorRef, fmt.Sprintf("a %s store", st.Type))
	if !ok {
		return nil
	}
	out := &plan.GitStore{Type: st.Type, Connector: gc, RepoName: s.RepoName, Paths: s.Paths, ValuesPaths: ms.ValuesPaths}
	if len(out.Paths) == 0 && s.FolderPath != "" {
		out.Paths = []string{s.FolderPath}
	}
	if s.GitFetchType == "Commit" {
		out.Commit = s.CommitID
	} else {
		out.Branch = s.Branch
	}
	if gc.ConnectionType == "Account" && s.RepoName == "" {
		r.diags.Errorf(pipeline.NodePos(file, s.Node), "missing-field", "connector %s connects an account: the store needs `repoName`", gc.ID).
			SetHint("repoName: the repository's name under %s", gc.URL)
	}
	return out
}

// s3Store resolves a manifest's S3 store and its Aws connector; the worker reads the objects
// when the stage starts.
func (r *resolver) s3Store(file string, ms *pipeline.ManifestSpec) *plan.S3Store {
	s := ms.Store.Spec
	k, ok := r.awsConnector(file, s.Node, s.ConnectorRef, "an S3 store")
	if !ok {
		return nil
	}
	out := &plan.S3Store{Connector: k, Bucket: s.BucketName, Region: s.Region, Paths: s.Paths, ValuesPaths: ms.ValuesPaths}
	if len(out.Paths) == 0 && s.FolderPath != "" {
		out.Paths = []string{s.FolderPath}
	}
	return out
}

// awsConnector resolves an Aws connector named at obj's connectorRef.
func (r *resolver) awsConnector(file string, obj *yaml.Node, ref, needs string) (plan.AwsConnector, bool) {
	pos := pipeline.NodePos(file, pipeline.ValueAt(obj, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return plan.AwsConnector{}, false
	}
	k := cf.Connector
	if k.Aws == nil || k.Aws.Credential == nil {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; %s needs an Aws connector", k.Identifier, k.Type, needs)
		return plan.AwsConnector{}, false
	}
	return AwsConnector(k), true
}

// AwsConnector is an Aws connector as a worker uses it.
func AwsConnector(k *pipeline.Connector) plan.AwsConnector {
	cr := k.Aws.Credential
	out := plan.AwsConnector{ID: k.Identifier, Credential: cr.Type, Region: cr.Region, Selectors: k.Aws.DelegateSelectors}
	if s := cr.Spec; s != nil {
		out.AccessKey, out.AccessKeyRef, out.SecretKeyRef = s.AccessKey, s.AccessKeyRef, s.SecretKeyRef
	}
	if x := cr.CrossAccountAccess; x != nil {
		out.RoleARN, out.ExternalID = x.CrossAccountRoleArn, x.ExternalID
	}
	return out
}

// chartRepo resolves a HelmChart's chart repository (Http store) or OCI registry (OciHelmChart
// store) and its connector; the worker pulls the chart when the stage starts.
func (r *resolver) chartRepo(file string, m *pipeline.Manifest) *plan.ChartRepo {
	spec, st := m.Spec, m.Spec.Store
	ref, at, want := st.Spec.ConnectorRef, st.Spec.Node, "HttpHelmRepo"
	if st.Type == "OciHelmChart" {
		c := st.Spec.Config
		if c == nil || c.Spec == nil { // reported by the validator, or ECR/GAR (unsupported)
			return nil
		}
		ref, at, want = c.Spec.ConnectorRef, c.Spec.Node, "OciHelmRepo"
	}
	pos := pipeline.NodePos(file, pipeline.ValueAt(at, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return nil
	}
	k := cf.Connector
	if k.Helm == nil || k.Type != want {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; a %s store needs an %s connector", k.Identifier, k.Type, st.Type, want)
		return nil
	}
	out := &plan.ChartRepo{Type: st.Type, Connector: plan.RegistryConnector{ID: k.Identifier, URL: k.Helm.HelmRepoURL},
		BasePath: st.Spec.BasePath, Name: spec.ChartName, Version: spec.ChartVersion, ValuesPaths: spec.ValuesPaths}
	if a := k.Helm.Auth; a != nil && a.Type == "UsernamePassword" && a.Spec != nil {
		out.Connector.Username, out.Connector.UsernameRef, out.Connector.PasswordRef = a.Spec.Username, a.Spec.UsernameRef, a.Spec.PasswordRef
	}
	return out
}

// gitConnector resolves a Git, Github, Gitlab or Bitbucket connector named at obj's connectorRef.
func (r *resolver) gitConnector(file string, obj *yaml.Node, ref, needs string) (plan.GitConnector, bool) {
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pipeline.NodePos(file, pipeline.ValueAt(obj, "connectorRef")), "connector", ref, "connector")
		return plan.GitConnector{}, false
	}
	k := cf.Connector
	gc := plan.GitConnector{ID: k.Identifier, Type: k.Type}
	var cred *pipeline.GitCredentials
	switch {
	case k.Git != nil:
		gc.URL, gc.ConnectionType, cred = k.Git.URL, k.Git.ConnectionType, k.Git.Spec
		if k.Git.Type != "Ssh" {
			cred = httpCredentials(cred)
		}
	case k.SCM != nil && k.SCM.Authentication != nil:
		gc.URL, gc.ConnectionType, cred = k.SCM.URL, k.SCM.Type, k.SCM.Authentication.Spec
		if k.SCM.Authentication.Type == "Http" && cred != nil {
			cred = httpCredentials(cred.Spec)
		}
	default:
		r.diags.Errorf(pipeline.NodePos(file, pipeline.ValueAt(obj, "connectorRef")), "connector",
			"connector %s is a %s connector; %s needs a Git, Github, Gitlab or Bitbucket connector", k.Identifier, k.Type, needs)
		return plan.GitConnector{}, false
	}
	if cred != nil {
		gc.Username, gc.UsernameRef, gc.PasswordRef, gc.SSHKeyRef = cred.Username, cred.UsernameRef, cred.PasswordRef, cred.SSHKeyRef
	}
	return gc, true
}

// httpCredentials keeps a token as the password: Git over HTTP sends either the same way.
func httpCredentials(c *pipeline.GitCredentials) *pipeline.GitCredentials {
	if c == nil {
		return nil
	}
	out := *c
	out.SSHKeyRef = ""
	if out.PasswordRef == "" {
		out.PasswordRef = out.TokenRef
	}
	return &out
}

var templateLineRe = regexp.MustCompile(`^template: [^:]+:(\d+):`)

func templatePos(base, path string, err error) diag.Pos {
	p := diag.Pos{File: filepath.Join(base, path), Line: 1, Col: 1}
	if m := templateLineRe.FindStringSubmatch(err.Error()); m != nil {
		fmt.Sscan(m[1], &p.Line)
	}
	return p
}

// subChart is the folder of the subchart a HelmChart deploys instead of its parent chart
// (`subChartPath`): a path below the chart, or a bare name for charts/NAME.
func subChart(p string) string {
	if p == "" || strings.Contains(p, "/") {
		return p
	}
	return path.Join("charts", p)
}

// folderManifest resolves a Kustomize or HelmChart manifest: the store's folder, read whole
// (Local) or fetched whole when the stage starts (Git), the overlay to build below it, and a
// chart's values files. A Local one is built now, so a broken kustomization or chart is an
// error before a run.
func (r *resolver) folderManifest(file, service string, m *pipeline.Manifest, pm *plan.Manifest) bool {
	spec, st := m.Spec, m.Spec.Store
	if m.Type == "HelmChart" {
		if spec.HelmVersion != "" && spec.HelmVersion != "V3" {
			r.diags.Unsupportedf(pipeline.NodePos(file, pipeline.ValueAt(spec.Node, "helmVersion")), "unsupported-field",
				"manifest %s: helmVersion %s is valid in the reference, but Gantry renders charts with Helm 3", m.Identifier, spec.HelmVersion)
			return false
		}
	}
	if spec.PluginPath != "" {
		r.diags.Unsupportedf(pipeline.NodePos(file, pipeline.Key(spec.Node, "pluginPath")), "unsupported-field",
			"manifest %s: Kustomize plugins (`pluginPath`) are valid in the reference, but Gantry does not run them yet", m.Identifier)
		return false
	}
	if len(spec.PatchesPaths) > 0 {
		r.diags.Unsupportedf(pipeline.NodePos(file, pipeline.Key(spec.Node, "patchesPaths")), "unsupported-field",
			"manifest %s: `patchesPaths` (KustomizePatches manifests) are valid in the reference, but Gantry does not apply them yet; list the patches in the kustomization", m.Identifier)
		return false
	}
	if st.Type == "S3" {
		r.diags.Unsupportedf(pipeline.NodePos(file, pipeline.ValueAt(st.Node, "type")), "unsupported-manifest-store",
			"manifest %s: Gantry reads K8sManifest and Values files from S3 stores, not %s folders (a chart in S3 is a .tgz Gantry does not unpack yet)", m.Identifier, m.Type).
			SetHint("keep the %s in Git or beside the service (`type: Local`)", m.Type)
		return false
	}
	if st.Type == "Http" || st.Type == "OciHelmChart" {
		pm.Chart = r.chartRepo(file, m)
		pm.Folder = path.Join(spec.ChartName, subChart(spec.SubChartPath)) // the chart's files are fetched below its name
		return pm.Chart != nil
	}
	folder := st.Spec.FolderPath
	if folder == "" && len(st.Spec.Paths) > 0 {
		folder = st.Spec.Paths[0]
	}
	pm.Folder = path.Join(path.Clean(folder), subChart(spec.SubChartPath))
	if o := spec.OverlayConfiguration; o != nil && o.KustomizeYamlFolderPath != "" {
		pm.Folder = path.Join(folder, o.KustomizeYamlFolderPath)
	}
	if st.Type != "Local" {
		if pm.Store = r.gitStore(file, spec); pm.Store != nil {
			pm.Store.Paths, pm.Store.AllFiles = []string{folder}, true
		}
		return pm.Store != nil
	}
	base := filepath.Dir(file)
	files, err := readTreeOf(base, folder, true)
	if err != nil {
		r.diags.Errorf(pipeline.NodePos(file, st.Spec.Node), "manifest", "service %s, manifest %s: %v", service, m.Identifier, err).
			SetHint("paths are relative to %s", base)
		return false
	}
	pm.Files = files
	for _, p := range spec.ValuesPaths {
		vf, err := readTree(base, p)
		if err != nil {
			r.diags.Errorf(pipeline.NodePos(file, pipeline.ValueAt(spec.Node, "valuesPaths")), "manifest", "service %s, manifest %s: values %v", service, m.Identifier, err).
				SetHint("paths are relative to %s", base)
			return false
		}
		pm.Values = append(pm.Values, vf...)
	}
	mf := make([]manifests.File, len(files))
	for i, f := range files {
		mf[i] = manifests.File{Path: f.Path, Text: f.Text}
	}
	code, hint := "manifest-kustomize", fmt.Sprintf("`kustomize build %s` must succeed", filepath.Join(base, pm.Folder))
	if m.Type == "HelmChart" {
		code, hint = "manifest-helm", fmt.Sprintf("`helm template %s` must succeed", filepath.Join(base, pm.Folder))
		vf := make([]manifests.File, len(pm.Values))
		for i, f := range pm.Values {
			vf[i] = manifests.File{Path: f.Path, Text: f.Text}
		}
		_, err = manifests.Helm(mf, pm.Folder, vf, manifests.Release{Name: "release", Namespace: "default"})
	} else {
		_, err = manifests.Kustomize(mf, pm.Folder)
	}
	// Expressions are rendered when the stage runs: a file that still holds one may not build yet.
	if err != nil && !slices.ContainsFunc(files, func(f plan.File) bool { return strings.Contains(f.Text, "<+") }) {
		r.diags.Errorf(pipeline.NodePos(file, st.Spec.Node), code, "service %s, manifest %s: %v", service, m.Identifier, err).SetHint("%s", hint)
	}
	return true
}

// readTree reads a file, or the *.yaml, *.yml and *.tpl files under a folder in path order.
func readTree(base, rel string) ([]plan.File, error) { return readTreeOf(base, rel, false) }

// readTreeOf is readTree; all reads every file under a folder.
func readTreeOf(base, rel string, all bool) ([]plan.File, error) {
	root := filepath.Join(base, rel)
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%s: no such file or folder", rel)
	}
	var paths []string
	if !st.IsDir() {
		paths = []string{root}
	} else {
		err = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch ext := filepath.Ext(p); {
			case e.IsDir():
			case all, ext == ".yaml", ext == ".yml", ext == ".tpl":
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
		if len(paths) == 0 {
			return nil, fmt.Errorf("%s: folder holds no .yaml, .yml or .tpl files", rel)
		}
	}
	var out []plan.File
	size := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if size += len(b); size > plan.MaxManifestBytes {
			return nil, fmt.Errorf("%s: more than %d KiB of files, too much to carry in a run (Temporal payloads stop at 2 MB)", rel, plan.MaxManifestBytes>>10)
		}
		r, _ := filepath.Rel(base, p)
		files, err := manifests.UnpackDependencyFiles(filepath.ToSlash(r), b)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, plan.File{Path: f.Path, Text: f.Text})
		}
	}
	return out, nil
}

// environmentByRef finds the environment file a reference names (environmentRef of obj), with
// the stage's environmentInputs of obj filled in.
func (r *resolver) environmentByRef(obj *yaml.Node, ref string) (*pipeline.File, *plan.Environment) {
	f, ok := r.c.Environments[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pipeline.NodePos(r.file, pipeline.ValueAt(obj, "environmentRef")), "environment", ref, "environment")
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
		r.diags.Errorf(pipeline.NodePos(r.file, se.Node), "infrastructure", "stage %s must deploy to exactly one infrastructure definition", s.Identifier).
			SetHint("list one under `infrastructureDefinitions`; to deploy to several, loop the stage with a matrix strategy")
		return env, nil
	}
	return env, r.infraOf(e, se.InfrastructureDefinitions[0])
}

// InfraKey is the catalog key of an infrastructure definition: its environment and identifier.
func InfraKey(envRef, id string) string {
	return pipeline.LocalRef(envRef) + "/" + pipeline.LocalRef(id)
}

// infraOf resolves an infrastructure definition of environment e.
func (r *resolver) infraOf(e *pipeline.Environment, ref pipeline.InfraRef) *plan.Infrastructure {
	at := pipeline.NodePos(r.file, pipeline.ValueAt(ref.Node, "identifier"))
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
	infra := &plan.Infrastructure{ID: in.Identifier, Name: in.Name, Tags: in.Tags, Namespace: in.Spec.Namespace, ReleaseName: in.Spec.ReleaseName}
	if in.Type == "AwsLambda" || in.Type == "ECS" {
		k, ok := r.awsConnector(file, in.Spec.Node, in.Spec.ConnectorRef, "an "+in.Type+" infrastructure")
		if !ok {
			return nil
		}
		infra.Type, infra.Aws, infra.Region, infra.Cluster = in.Type, &k, in.Spec.Region, in.Spec.Cluster
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
		r.diags.Errorf(pipeline.NodePos(r.file, u.Node), "unknown-reference",
			"stage %s: useFromStage %q is not an earlier Deployment stage with %s", s.Identifier, u.Stage, what).
			SetHint("name a Deployment stage that comes before this one")
		return nil
	}
	return prev
}
