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

	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// notGoTemplate are the manifest types whose files are not Go templates over values: patches
// and OpenShift templates and params (whose ${{NAME}} a Go template would misread).
var notGoTemplate = map[string]bool{"KustomizePatches": true, "OpenshiftTemplate": true, "OpenshiftParam": true}

// filesManifest resolves a manifest of files (K8sManifest, Values, a K8sApply step's
// manifestSource, patches, OpenShift templates and params) declared in file: a Git store,
// fetched when the stage starts, or Local files read now, Go templates parsed.
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
			r.diags.Errorf(r.at(file, spec.Store.Spec.Node), "manifest", "%s: %v", what, err).
				SetHint("paths are relative to %s", base)
			continue
		}
		for _, mf := range files {
			if notGoTemplate[pm.Type] {
				break
			}
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
			r.diags.Errorf(r.at(file, pipeline.ValueAt(spec.Node, "valuesPaths")), "manifest", "%s: values %v", what, err).
				SetHint("paths are relative to %s", base)
			continue
		}
		pm.Values = append(pm.Values, files...)
	}
}

// stepManifests resolves the manifestSource of the stage's K8sApply steps, keyed by the step's
// path below the stage (spec.execution.steps...); Local paths are relative to the pipeline.
func (r *resolver) stepManifests(s *pipeline.Stage) map[string]plan.Manifest {
	if s.Execution() == nil {
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
			(&pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &diag.List{}}).Decode(v.Step.Spec, sp, "EcsRunTask spec") // checked by validate
			if pm, ok := r.runTaskFiles(s, v.Step, sp); ok {
				out[strings.Join(v.Path, ".")] = pm
			}
		case *steps.K8sApply:
			(&pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &diag.List{}}).Decode(v.Step.Spec, sp, "K8sApply spec") // checked by validate
			r.applyManifest(s, v, sp, out)
		}
	}
	ex := s.Execution()
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
	pm := plan.Manifest{ID: st.Identifier, Type: stepspec.EcsRunTask}
	read := func(store *pipeline.ManifestStore, field string) []plan.File {
		if store == nil || store.Spec == nil {
			return nil
		}
		if store.Type != "Local" {
			r.diags.Unsupportedf(r.at(r.file, pipeline.ValueAt(store.Node, "type")), "unsupported-manifest-store",
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
				r.diags.Errorf(r.at(file, m.Node), "manifest", "NativeHelm service %s has more than one HelmChart manifest; a Helm release deploys one chart", service)
			}
		case "Values":
		default:
			r.diags.Unsupportedf(r.at(file, pipeline.ValueAt(m.Node, "type")), "unsupported-manifest-type",
				"NativeHelm service %s: Gantry deploys a HelmChart manifest and Values overrides as a Helm release, not %s manifests", service, m.Type).
				SetHint("use `type: Kubernetes` for %s manifests", m.Type)
		}
	}
	if charts == 0 {
		r.diags.Errorf(r.at(file, spec.Node), "manifest", "NativeHelm service %s has no HelmChart manifest", service).
			SetHint("add a manifest of `type: HelmChart`")
	}
}

// lambdaManifests checks that an AwsLambda service defines its function with one
// AwsLambdaFunctionDefinition manifest and deploys a zip from S3 or an image.
func (r *resolver) lambdaManifests(file, service string, spec *pipeline.ServiceSpec) {
	defs, aliases := 0, 0
	for _, me := range spec.Manifests {
		if m := me.Manifest; m.Type == "AwsLambdaFunctionDefinition" {
			if defs++; defs == 2 {
				r.diags.Errorf(r.at(file, m.Node), "manifest", "AwsLambda service %s has more than one AwsLambdaFunctionDefinition manifest; a service deploys one function", service)
			}
		} else if m.Type == "AwsLambdaFunctionAliasDefinition" {
			if aliases++; aliases == 2 {
				r.diags.Errorf(r.at(file, m.Node), "manifest", "AwsLambda service %s has more than one AwsLambdaFunctionAliasDefinition manifest; a canary routes through one alias", service)
			}
		} else {
			r.diags.Errorf(r.at(file, pipeline.ValueAt(m.Node, "type")), "manifest",
				"AwsLambda service %s: a %s manifest deploys to Kubernetes, not to Lambda", service, m.Type).
				SetHint("an AwsLambda service has one manifest of `type: AwsLambdaFunctionDefinition`")
		}
	}
	if defs == 0 {
		r.diags.Errorf(r.at(file, spec.Node), "manifest", "AwsLambda service %s has no AwsLambdaFunctionDefinition manifest", service).
			SetHint("add a manifest of `type: AwsLambdaFunctionDefinition`: the function's name, runtime, handler, role and settings, in JSON or YAML")
	}
	if spec.Artifacts == nil || spec.Artifacts.Primary == nil {
		r.diags.Errorf(r.at(file, spec.Node), "artifact", "AwsLambda service %s has no primary artifact: the function's code", service).
			SetHint("an AmazonS3 source (a .zip) or an image (Ecr, DockerRegistry)")
	}
}

// manifestSet is what manifests a service of a deployment type has: one of each required
// type, any number of the optional ones, nothing else.
type manifestSet struct {
	deploymentType, target string
	required, optional     []string
}

var (
	ecsManifests = manifestSet{"ECS", "ECS", []string{"EcsTaskDefinition", "EcsServiceDefinition"}, []string{"EcsScalableTargetDefinition", "EcsScalingPolicyDefinition"}}
	asgManifests = manifestSet{"Asg", "an Auto Scaling group", []string{"AsgLaunchTemplate", "AsgConfiguration"}, []string{"AsgScalingPolicy", "AsgScheduledUpdateGroupAction"}}
)

// checkManifests checks a service's manifests against the set of its deployment type.
func (r *resolver) checkManifests(file, service string, spec *pipeline.ServiceSpec, set manifestSet) {
	count := map[string]int{}
	for _, me := range spec.Manifests {
		m := me.Manifest
		switch {
		case slices.Contains(set.required, m.Type):
			if count[m.Type]++; count[m.Type] == 2 {
				r.diags.Errorf(r.at(file, m.Node), "manifest", "%s service %s has more than one %s manifest; a service deploys one", set.deploymentType, service, m.Type)
			}
		case slices.Contains(set.optional, m.Type):
		default:
			r.diags.Errorf(r.at(file, pipeline.ValueAt(m.Node, "type")), "manifest",
				"%s service %s: a %s manifest does not deploy to %s", set.deploymentType, service, m.Type, set.target).
				SetHint("%s services have %s manifests, and optionally %s ones", set.deploymentType, strings.Join(set.required, " and "), strings.Join(set.optional, " and "))
		}
	}
	for _, t := range set.required {
		if count[t] == 0 {
			r.diags.Errorf(r.at(file, spec.Node), "manifest", "%s service %s has no %s manifest", set.deploymentType, service, t).
				SetHint("add a manifest of `type: %s` (JSON or YAML, the AWS API request's fields)", t)
		}
	}
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

// patchesManifest is a Kustomize manifest's `patchesPaths`, files of its store, as the
// KustomizePatches manifest they amount to (nil when it has none).
func (r *resolver) patchesManifest(file, service string, m *pipeline.Manifest) *plan.Manifest {
	if len(m.Spec.PatchesPaths) == 0 {
		return nil
	}
	store := *m.Spec.Store
	storeSpec := *store.Spec
	storeSpec.Paths, storeSpec.FolderPath = m.Spec.PatchesPaths, ""
	store.Spec = &storeSpec
	pm := &plan.Manifest{ID: m.Identifier + "-patches", Type: "KustomizePatches"}
	r.filesManifest(file, fmt.Sprintf("service %s, manifest %s, patchesPaths", service, m.Identifier), &pipeline.ManifestSpec{Node: m.Spec.Node, Store: &store}, pm)
	return pm
}

// patchesWithoutKustomize warns of KustomizePatches manifests in a service with no Kustomize
// manifest for them to patch.
func (r *resolver) patchesWithoutKustomize(file, service string, spec *pipeline.ServiceSpec) {
	var patches []*pipeline.Manifest
	for _, me := range spec.Manifests {
		switch m := me.Manifest; {
		case m == nil:
		case m.Type == "Kustomize":
			return
		case m.Type == "KustomizePatches":
			patches = append(patches, m)
		}
	}
	for _, m := range patches {
		r.diags.Warnf(r.at(file, pipeline.ValueAt(m.Node, "type")), "manifest-ignored",
			"service %s, manifest %s: KustomizePatches patch a Kustomize manifest's build, and the service has none; the patches are not applied", service, m.Identifier).
			SetHint("add a manifest of `type: Kustomize`, or make these files a K8sManifest")
	}
}

// folderManifest resolves a Kustomize or HelmChart manifest: the store's folder, read whole
// (Local) or fetched whole when the stage starts (Git), the overlay to build below it, and a
// chart's values files. A Local one is built now, so a broken kustomization or chart is an
// error before a run.
func (r *resolver) folderManifest(file, service string, m *pipeline.Manifest, pm *plan.Manifest) bool {
	spec, st := m.Spec, m.Spec.Store
	if !r.folderSupported(file, m) {
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
		r.diags.Errorf(r.at(file, st.Spec.Node), "manifest", "service %s, manifest %s: %v", service, m.Identifier, err).
			SetHint("paths are relative to %s", base)
		return false
	}
	pm.Files = files
	for _, p := range spec.ValuesPaths {
		vf, err := readTree(base, p)
		if err != nil {
			r.diags.Errorf(r.at(file, pipeline.ValueAt(spec.Node, "valuesPaths")), "manifest", "service %s, manifest %s: values %v", service, m.Identifier, err).
				SetHint("paths are relative to %s", base)
			return false
		}
		pm.Values = append(pm.Values, vf...)
	}
	r.buildFolder(file, service, m, pm)
	return true
}

// folderSupported reports the folder manifests Gantry cannot render yet: Helm 2 charts,
// Kustomize plugins, folders in S3.
func (r *resolver) folderSupported(file string, m *pipeline.Manifest) bool {
	spec, st := m.Spec, m.Spec.Store
	if m.Type == "HelmChart" {
		if spec.HelmVersion != "" && spec.HelmVersion != "V3" {
			r.diags.Unsupportedf(r.at(file, pipeline.ValueAt(spec.Node, "helmVersion")), "unsupported-field",
				"manifest %s: helmVersion %s is valid in the reference, but Gantry renders charts with Helm 3", m.Identifier, spec.HelmVersion)
			return false
		}
	}
	if spec.PluginPath != "" {
		r.diags.Unsupportedf(r.at(file, pipeline.Key(spec.Node, "pluginPath")), "unsupported-field",
			"manifest %s: Kustomize plugins (`pluginPath`) are valid in the reference, but Gantry does not run them yet", m.Identifier)
		return false
	}
	if st.Type == "S3" {
		r.diags.Unsupportedf(r.at(file, pipeline.ValueAt(st.Node, "type")), "unsupported-manifest-store",
			"manifest %s: Gantry reads K8sManifest and Values files from S3 stores, not %s folders (a chart in S3 is a .tgz Gantry does not unpack yet)", m.Identifier, m.Type).
			SetHint("keep the %s in Git or beside the service (`type: Local`)", m.Type)
		return false
	}
	return true
}

// buildFolder builds a Local folder manifest now (kustomize build, or helm template with its
// values), so that a broken one is an error before a run; files that still hold expressions
// are built when the stage runs.
func (r *resolver) buildFolder(file, service string, m *pipeline.Manifest, pm *plan.Manifest) {
	base, files, st := filepath.Dir(file), pm.Files, m.Spec.Store
	var err error
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
		r.diags.Errorf(r.at(file, st.Spec.Node), code, "service %s, manifest %s: %v", service, m.Identifier, err).SetHint("%s", hint)
	}
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
