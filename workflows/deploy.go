package workflows

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
)

// deployment is a Deployment stage's service, environment and infrastructure: the phases that
// resolve them before the steps, and what the deploying steps are given.
type deployment struct {
	*stageRun
	target      *deployTarget // the stage's target
	key         string        // its resource constraint's key
	configFiles []plan.File   // the service's config files, fetched ones too (nil: Ssh fetches its own)
}

// deployTarget is a Deployment stage's resolved target, rendered at stage start.
type deployTarget struct {
	namespace   string
	releaseName string
	connector   plan.Connector
	manifests   []plan.Manifest
	// aws and region are an AwsLambda infrastructure's; artifact the code its steps deploy.
	aws      *plan.AwsConnector
	region   string
	cluster  string
	asgName  string // an Asg infrastructure's baseAsgName
	artifact *contract.DeployArtifact
	// stepManifests are K8sApply steps' own manifests, by the step's FQN below the stage.
	stepManifests map[string]plan.Manifest
	// custom is a CustomDeployment infrastructure; ssh a Pdc one (hosts rendered) with the
	// service's config files.
	custom      *plan.CustomInfra
	ssh         *plan.SshInfra
	configFiles []plan.File
	// deployed (an Ssh stage's) says where the artifact is recorded when the stage succeeds;
	// rollbackArtifact is what rollback steps restore (nil: nothing deployed before).
	deployed         *contract.DeployedKey
	rollbackArtifact *contract.DeployArtifact
}

// deployContext runs a Deployment stage's service and infrastructure phases (spec 1.3.1,
// 15.1): it renders the service, environment and infrastructure fields and publishes them as
// `<+service.*>`, `<+serviceVariables.*>`, `<+artifact(s).*>`, `<+manifests.*>`, `<+env.*>`,
// `<+infra.*>` and `<+INFRA_KEY>` for the stage's steps. Failures in these phases are
// expression errors, which retrying cannot fix, so they fail the stage.
func (s *deployment) deployContext(ctx workflow.Context) error {
	manifests, render, err := s.servicePhases(ctx)
	if err != nil {
		return err
	}
	return s.infrastructurePhase(ctx, s.in.Stage.Deploy, manifests, render)
}

// servicePhases runs the phases before the infrastructure's: service, artifact, service
// variables and environment. It returns the service's manifests and the stage's renderer.
func (s *deployment) servicePhases(ctx workflow.Context) ([]plan.Manifest, renderFunc, error) {
	d := s.in.Stage.Deploy
	render := func(text, what string) (string, error) {
		out, err := expressions.RenderString(text, expressions.NewScope(s.root, s.fqn), expressions.Options{})
		if err != nil {
			return "", fmt.Errorf("%s: %v", what, err)
		}
		return out, nil
	}
	manifests, err := s.servicePhase(ctx, d.Service, render)
	if err != nil {
		return nil, nil, err
	}
	if err := s.artifactPhase(ctx, d.Service.Artifact, render); err != nil {
		return nil, nil, err
	}
	envVars, err := s.serviceVariables(d.Service, d.Environment)
	if err != nil {
		return nil, nil, err
	}
	s.environmentPhase(d.Environment, envVars)
	return manifests, render, nil
}

// renderFunc renders a text of the deployment with the stage's expressions; what names it in
// errors.
type renderFunc func(text, what string) (string, error)

// servicePhase publishes <+service.*> and <+manifests.*> and fetches the manifests stored
// outside the plan (Git, chart repositories, S3); it returns the service's manifests.
func (s *deployment) servicePhase(ctx workflow.Context, sv *plan.Service, render renderFunc) ([]plan.Manifest, error) {
	s.root["service"] = map[string]any{"name": sv.Name, "identifier": sv.ID, "description": sv.Description,
		"tags": tagMap(sv.Tags), "type": sv.Type, "gitOpsEnabled": false}
	ms := map[string]any{}
	for _, m := range sv.Manifests {
		ms[m.ID] = map[string]any{"identifier": m.ID, "type": m.Type, "store": "Local"}
	}
	s.root["manifests"] = ms
	if err := s.configFilePhase(ctx, sv, render); err != nil {
		return nil, err
	}
	manifests := sv.Manifests
	if slices.ContainsFunc(manifests, func(m plan.Manifest) bool { return m.Store != nil || m.Chart != nil || m.S3 != nil }) &&
		workflow.GetVersion(ctx, changeGitManifests, workflow.DefaultVersion, 1) == 1 {
		var err error
		if manifests, err = s.fetchManifests(ctx, manifests, ms, render); err != nil {
			return nil, err
		}
	}
	return manifests, nil
}

// configFilePhase fetches the service's config files kept in Git and publishes them all for
// <+configFile.getAsString("id")> and getAsBase64. Executions started before it (and their
// Ssh stages) fetched Git config files in the Ssh infrastructure phase, and had no functions.
func (s *deployment) configFilePhase(ctx workflow.Context, sv *plan.Service, render renderFunc) error {
	if len(sv.ConfigFiles) == 0 && len(sv.ConfigStores) == 0 {
		return nil
	}
	if workflow.GetVersion(ctx, changeConfigFiles, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	files := slices.Clone(sv.ConfigFiles)
	if len(sv.ConfigStores) > 0 {
		fetched, err := s.fetchManifests(ctx, sv.ConfigStores, map[string]any{}, render)
		if err != nil {
			return err
		}
		for _, m := range fetched {
			for _, f := range m.Files {
				f.ConfigFile = m.ID
				files = append(files, f)
			}
		}
	}
	s.configFiles = files
	texts := map[string]any{}
	for _, f := range files {
		switch prev := texts[f.ConfigFile].(type) {
		case nil:
			texts[f.ConfigFile] = f.Text
		case string:
			texts[f.ConfigFile] = []any{prev, f.Text}
		case []any:
			texts[f.ConfigFile] = append(prev, f.Text)
		}
	}
	s.root["configFile"] = texts
	return nil
}

// artifactPhase resolves the primary artifact (an image tag to its digest, an S3 object) and
// publishes <+artifact.*>.
func (s *deployment) artifactPhase(ctx workflow.Context, a *plan.Artifact, render renderFunc) error {
	if a == nil {
		return nil
	}
	tag, err := render(a.Tag, "artifact tag")
	if err != nil {
		return err
	}
	path, err := render(a.ImagePath, "artifact imagePath")
	if err != nil {
		return err
	}
	image := path
	if tag != "" {
		image += ":" + tag
	}
	if a.Registry != "" {
		image = strings.TrimSuffix(a.Registry, "/") + "/" + image
	}
	art := map[string]any{"image": image, "imagePath": path, "tag": tag, "type": a.Type, "identifier": a.ID,
		"connectorRef": a.ConnectorRef}
	if a.Type == "CustomArtifact" {
		art["version"] = path // the version is the artifact
	}
	if a.S3 != nil {
		// An AmazonS3 source (only plans made since it exists have one).
		if art, err = s.resolveS3Artifact(ctx, a, render); err != nil {
			return err
		}
	}
	if a.Ami != nil {
		// An AmazonMachineImage source (only plans made since it exists have one).
		if art, err = s.resolveAmiArtifact(ctx, a, render); err != nil {
			return err
		}
	}
	if a.Custom != nil {
		// A CustomArtifact source whose script lists versions (only plans made since it
		// exists have one).
		if err := s.resolveCustomArtifact(ctx, a, art, render); err != nil {
			return err
		}
	}
	if a.Connector != nil && workflow.GetVersion(ctx, changeArtifactDigest, workflow.DefaultVersion, 1) == 1 {
		if err := s.resolveArtifact(ctx, a, path, tag, art, render); err != nil {
			return err
		}
	}
	s.root["artifact"] = art
	s.root["artifacts"] = map[string]any{"primary": art}
	return nil
}

// serviceVariables publishes <+serviceVariables.*>: the service definition's, then the
// environment's, then the environment's overrides for the service (spec 10.3 levels 5, 4, 3).
// It returns the environment's own variables.
func (s *deployment) serviceVariables(sv *plan.Service, env *plan.Environment) (map[string]any, error) {
	svars := map[string]any{}
	if err := renderVariables(sv.Variables, svars, s.root, s.fqn); err != nil {
		return nil, fmt.Errorf("service %s: %v", sv.ID, err)
	}
	envVars := map[string]any{}
	if err := renderVariables(env.Variables, envVars, s.root, s.fqn); err != nil {
		return nil, fmt.Errorf("environment %s: %v", env.ID, err)
	}
	for k, v := range envVars {
		if _, ok := svars[k]; ok {
			svars[k] = v
		}
	}
	if err := renderVariables(env.ServiceOverrides, svars, s.root, s.fqn); err != nil {
		return nil, fmt.Errorf("environment %s, overrides of service %s: %v", env.ID, sv.ID, err)
	}
	s.root["serviceVariables"] = svars
	s.root["serviceVariableOverrides"] = svars
	return envVars, nil
}

// environmentPhase publishes <+env.*>.
func (s *deployment) environmentPhase(env *plan.Environment, envVars map[string]any) {
	s.root["env"] = map[string]any{"name": env.Name, "identifier": env.ID, "description": env.Description,
		"type": env.Type, "tags": tagMap(env.Tags), "variables": envVars}
	if env.GroupRef != "" {
		s.root["env"].(map[string]any)["envGroupRef"] = env.GroupRef
	}
}

// infrastructurePhase renders the infrastructure (namespace, release name, and for AWS the
// region and cluster), publishes <+infra.*> and <+INFRA_KEY>, sets the stage's deploy
// target and fetches the steps' own manifests.
func (s *deployment) infrastructurePhase(ctx workflow.Context, d *plan.Deployment, manifests []plan.Manifest, render renderFunc) error {
	sv, env, inf := d.Service, d.Environment, d.Infra
	ns, err := render(inf.Namespace, "infrastructure namespace")
	if err != nil {
		return err
	}
	key := sha1.Sum([]byte(strings.Join([]string{sv.ID, env.ID, inf.Connector.ID, ns}, "/")))
	infraKey := hex.EncodeToString(key[:])
	s.root["INFRA_KEY"] = infraKey
	s.root["INFRA_KEY_SHORT_ID"] = infraKey[:6]
	connector := inf.Connector.ID
	if inf.Aws != nil {
		connector = inf.Aws.ID
	}
	s.key = infrastructureKey(sv.ID, env.ID, connector, inf.ID)
	if inf.Custom != nil {
		return s.customInfrastructure(d, render)
	}
	if inf.Ssh != nil {
		return s.sshInfrastructure(ctx, d, render)
	}
	release := inf.ReleaseName
	if release == "" {
		release = "release-<+INFRA_KEY_SHORT_ID>"
	}
	if release, err = render(release, "infrastructure releaseName"); err != nil {
		return err
	}
	release = strings.ToLower(release)
	s.root["infra"] = map[string]any{"name": inf.Name, "infraIdentifier": inf.ID, "identifier": inf.ID,
		"connectorRef": inf.Connector.ID, "connector": map[string]any{"name": inf.Connector.Name},
		"namespace": ns, "releaseName": release, "tags": tagMap(inf.Tags)}
	s.target = &deployTarget{namespace: ns, releaseName: release, connector: inf.Connector, manifests: manifests}
	if inf.Aws != nil {
		return s.awsInfrastructure(ctx, d, render)
	}
	if len(d.StepManifests) > 0 && workflow.GetVersion(ctx, changeStepManifests, workflow.DefaultVersion, 1) == 1 {
		if s.target.stepManifests, err = s.stepSources(ctx, d.StepManifests, render); err != nil {
			return err
		}
	}
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("deploys service %s to environment %s (%s), infrastructure %s: namespace %s, release %s",
		sv.ID, env.ID, env.Type, inf.ID, ns, release))
	return nil
}

// awsInfrastructure is the infrastructure phase of an AwsLambda or ECS infrastructure (only
// plans made since they exist have one): the region, the cluster, and the artifact the
// AWS steps deploy.
func (s *deployment) awsInfrastructure(ctx workflow.Context, d *plan.Deployment, render renderFunc) error {
	sv, env, inf := d.Service, d.Environment, d.Infra
	region, err := render(inf.Region, "infrastructure region")
	if err != nil {
		return err
	}
	infra := s.root["infra"].(map[string]any)
	cluster, err := render(inf.Cluster, "infrastructure cluster")
	if err != nil {
		return err
	}
	infra["connectorRef"], infra["region"], infra["type"] = inf.Aws.ID, region, inf.Type
	infra["connector"] = map[string]any{"name": inf.Aws.ID}
	s.target.aws, s.target.region = inf.Aws, region
	if cluster != "" {
		infra["cluster"], s.target.cluster = cluster, cluster
	}
	asgName, err := render(inf.BaseAsgName, "infrastructure baseAsgName")
	if err != nil {
		return err
	}
	if asgName != "" {
		infra["baseAsgName"], s.target.asgName = asgName, asgName
	}
	if art, ok := s.root["artifact"].(map[string]any); ok {
		s.target.artifact = &contract.DeployArtifact{Type: fmt.Sprint(art["type"])}
		if sv.Artifact.S3 != nil {
			s.target.artifact.Bucket, s.target.artifact.Key = fmt.Sprint(art["bucketName"]), fmt.Sprint(art["filePath"])
		} else {
			s.target.artifact.Image = fmt.Sprint(art["image"])
		}
	}
	target := "AWS Lambda in " + region
	switch {
	case cluster != "":
		target = "ECS cluster " + cluster + " in " + region
	case inf.Type == "Asg":
		target = "Auto Scaling groups in " + region
	}
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("deploys service %s to environment %s (%s), infrastructure %s: %s with connector %s",
		sv.ID, env.ID, env.Type, inf.ID, target, inf.Aws.ID))
	if len(d.StepManifests) > 0 { // EcsRunTask steps' definitions
		if s.target.stepManifests, err = s.stepSources(ctx, d.StepManifests, render); err != nil {
			return err
		}
	}
	return nil
}

// stepSources fetches the Git-stored manifestSource of K8sApply steps with the service's
// manifests' machinery, keyed (and recorded on the stage node) by the step's FQN below the
// stage; they are not published as `<+manifests.*>`, which are the service's.
func (s *deployment) stepSources(ctx workflow.Context, in map[string]plan.Manifest, render func(text, what string) (string, error)) (map[string]plan.Manifest, error) {
	keys := slices.Sorted(maps.Keys(in))
	list := make([]plan.Manifest, len(keys))
	for i, k := range keys {
		list[i] = in[k]
		list[i].ID = k
	}
	fetched, err := s.fetchManifests(ctx, list, map[string]any{}, render)
	if err != nil {
		return nil, err
	}
	out := make(map[string]plan.Manifest, len(keys))
	for i, k := range keys {
		fetched[i].ID = in[k].ID
		out[k] = fetched[i]
	}
	return out, nil
}

// fetchManifests fetches the stage's Git-stored manifests on a worker, all at once, and
// returns the manifests with their files. Each is fetched once, at one commit, for the whole
// stage; the commit is published as `<+manifests.ID.commitId>` and recorded on the stage node.
func (s *deployment) fetchManifests(ctx workflow.Context, in []plan.Manifest, published map[string]any, render func(text, what string) (string, error)) ([]plan.Manifest, error) {
	out := slices.Clone(in)
	futures := make([]workflow.Future, len(out))
	for i := range out {
		f, err := s.startFetch(ctx, &out[i], render)
		if err != nil {
			return nil, err
		}
		futures[i] = f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		var got contract.Fetched
		if err := f.Get(ctx, &got); err != nil {
			return nil, err
		}
		s.recordFetched(&out[i], got, published)
	}
	return out, nil
}

// startFetch starts the activity that fetches a manifest stored outside the plan (a chart
// repository, S3, Git) with its references rendered, and points m at what it asked for; nil
// when the plan holds the manifest's files.
func (s *deployment) startFetch(ctx workflow.Context, m *plan.Manifest, render func(text, what string) (string, error)) (workflow.Future, error) {
	if m.Chart != nil {
		ch := *m.Chart
		var err error
		if ch.Version, err = render(ch.Version, "manifest "+m.ID+" chartVersion"); err != nil {
			return nil, err
		}
		actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("pull chart %s %s for manifest %s from %s",
			ch.Name, cmp.Or(ch.Version, "(latest)"), m.ID, ch.Connector.URL)))
		f := workflow.ExecuteActivity(actx, contract.FetchChart, contract.ChartInput{ExecutionID: s.in.ExecutionID, Manifest: m.ID, Chart: ch})
		m.Chart = &ch
		return f, nil
	}
	if m.S3 != nil {
		st, err := renderS3Store(*m.S3, m.ID, render)
		if err != nil {
			return nil, err
		}
		ao := s.fetchOptions(ctx, fmt.Sprintf("read manifest %s from s3://%s (%s)", m.ID, st.Bucket, strings.Join(st.Paths, ", ")))
		ao.TaskQueue = connectorQueue(ao.TaskQueue, st.Connector.Selectors)
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), contract.FetchS3Manifests,
			contract.S3FetchInput{ExecutionID: s.in.ExecutionID, Manifest: m.ID, Store: st})
		m.S3 = &st
		return f, nil
	}
	if m.Store == nil {
		return nil, nil
	}
	st := *m.Store
	var err error
	if st.Branch, err = render(st.Branch, "manifest "+m.ID+" branch"); err != nil {
		return nil, err
	}
	if st.Commit, err = render(st.Commit, "manifest "+m.ID+" commitId"); err != nil {
		return nil, err
	}
	ref := "branch " + st.Branch
	if st.Commit != "" {
		ref = "commit " + st.Commit
	}
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("fetch manifest %s from %s, %s", m.ID, st.RepoDisplay(), ref)))
	f := workflow.ExecuteActivity(actx, contract.FetchManifests, contract.FetchInput{ExecutionID: s.in.ExecutionID, Manifest: m.ID, Store: st})
	m.Store = &st
	return f, nil
}

// recordFetched keeps a fetched manifest's files and publishes where they came from, as
// `<+manifests.ID.*>` and on the stage node.
func (s *deployment) recordFetched(m *plan.Manifest, got contract.Fetched, published map[string]any) {
	m.Files, m.Values = got.Files, got.Values
	if m.Chart != nil {
		s.pulledChart(m, got, published)
		return
	}
	if s.tree.Manifests == nil {
		s.tree.Manifests = map[string]string{}
	}
	if st := m.S3; st != nil {
		published[m.ID] = map[string]any{"identifier": m.ID, "type": m.Type, "store": "S3", "bucketName": st.Bucket,
			"region": st.Region, "paths": st.Paths, "connectorRef": st.Connector.ID, "digest": got.Digest}
		s.tree.Manifests[m.ID] = got.Digest
		s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("manifest %s: s3://%s %s, %s (%d files, %d values files)",
			m.ID, st.Bucket, strings.Join(st.Paths, ", "), got.Digest, len(got.Files), len(got.Values)))
		return
	}
	published[m.ID] = map[string]any{"identifier": m.ID, "type": m.Type, "store": m.Store.Type,
		"commitId": got.Commit, "branch": m.Store.Branch, "repoName": m.Store.RepoName, "connectorRef": m.Store.Connector.ID}
	s.tree.Manifests[m.ID] = got.Commit
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("manifest %s: %s at commit %s (%d files, %d values files)",
		m.ID, m.Store.RepoDisplay(), got.Commit, len(got.Files), len(got.Values)))
}

// pulledChart publishes a chart pulled from a repository as `<+manifests.ID.*>` (chartName,
// chartVersion, and Chart.yaml under helm) and records the version (and an OCI chart's digest)
// on the stage node, so a rerun pulls the same chart.
func (s *deployment) pulledChart(m *plan.Manifest, got contract.Fetched, published map[string]any) {
	ch, meta := m.Chart, got.Chart
	ch.Version, ch.Digest = meta.Version, got.Digest
	published[m.ID] = map[string]any{"identifier": m.ID, "type": m.Type, "store": ch.Type, "connectorRef": ch.Connector.ID,
		"chartName": ch.Name, "chartVersion": meta.Version,
		"helm": map[string]any{"name": meta.Name, "version": meta.Version, "appVersion": meta.AppVersion, "apiVersion": meta.APIVersion,
			"description": meta.Description, "kubeVersion": meta.KubeVersion,
			"metadata": map[string]any{"url": ch.Connector.URL, "basePath": ch.BasePath, "chartName": ch.Name, "chartVersion": meta.Version}}}
	if s.tree.Manifests == nil {
		s.tree.Manifests = map[string]string{}
	}
	s.tree.Manifests[m.ID] = ch.Pin(meta.Version, got.Digest)
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("manifest %s: chart %s %s from %s (%d files)",
		m.ID, ch.Name, s.tree.Manifests[m.ID], ch.Connector.URL, len(got.Files)))
}

// fetchOptions are the activity options of a service-phase fetch (a manifest, a chart, an
// artifact): on this stage's task queue, retried as infrastructure is.
func (s *deployment) fetchOptions(ctx workflow.Context, what string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		StartToCloseTimeout: fetchTimeout,
		Summary:             s.tree.Path + ": " + what,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: s.in.Settings.InfraAttempts},
	}
}

// resolveArtifact resolves the artifact's tag (or the highest tag matching tagRegex) to a
// digest on a worker, publishes `<+artifact.tag>`, `<+artifact.digest>` and `<+artifact.image>`
// (registry/path:tag@digest, so every step deploys that one image) and records the digest on
// the stage node.
func (s *deployment) resolveArtifact(ctx workflow.Context, a *plan.Artifact, path, tag string, art map[string]any, render func(text, what string) (string, error)) error {
	in := *a
	in.ImagePath, in.Tag = path, tag
	regex, err := render(a.TagRegex, "artifact tagRegex")
	if err != nil {
		return err
	}
	in.TagRegex = regex
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("resolve artifact %s (%s)", a.ID, path)))
	var got contract.Resolved
	if err := workflow.ExecuteActivity(actx, contract.ResolveArtifact, contract.ResolveInput{ExecutionID: s.in.ExecutionID, Artifact: in}).Get(ctx, &got); err != nil {
		return err
	}
	art["tag"], art["digest"], art["image"] = got.Tag, got.Digest, got.Image
	s.tree.Artifact = got.Digest
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("artifact %s: %s", a.ID, got.Image))
	return nil
}

// resolveCustomArtifact runs a CustomArtifact source's listing script on a worker and
// publishes the version picked as `<+artifact.version>` (and the image, as a version-only
// source publishes it) with its attributes as `<+artifact.metadata.*>`.
func (s *deployment) resolveCustomArtifact(ctx workflow.Context, a *plan.Artifact, art map[string]any, render renderFunc) error {
	sc := *a.Custom
	var err error
	for _, f := range []struct {
		v    *string
		what string
	}{{&sc.Script, "script"}, {&sc.Version, "version"}, {&sc.VersionRegex, "versionRegex"}} {
		if *f.v, err = render(*f.v, "artifact "+a.ID+" "+f.what); err != nil {
			return err
		}
	}
	sc.Inputs = slices.Clone(sc.Inputs)
	for i := range sc.Inputs {
		if sc.Inputs[i].Value, err = render(sc.Inputs[i].Value, "artifact "+a.ID+" input "+sc.Inputs[i].Name); err != nil {
			return err
		}
	}
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("list the versions of artifact %s", a.ID)))
	var got contract.CustomArtifactResolved
	if err := workflow.ExecuteActivity(actx, contract.ResolveCustomArtifact, contract.CustomArtifactInput{ExecutionID: s.in.ExecutionID, Artifact: a.ID, Script: sc}).Get(ctx, &got); err != nil {
		return err
	}
	art["image"], art["imagePath"], art["version"], art["metadata"] = got.Version, got.Version, got.Version, got.Metadata
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("artifact %s: version %s (of %d listed)", a.ID, got.Version, got.Listed))
	return nil
}

// renderS3Store renders the expressions of an S3 store's bucket, region and paths.
func renderS3Store(st plan.S3Store, id string, render func(text, what string) (string, error)) (plan.S3Store, error) {
	var err error
	if st.Bucket, err = render(st.Bucket, "manifest "+id+" bucketName"); err != nil {
		return st, err
	}
	if st.Region, err = render(st.Region, "manifest "+id+" region"); err != nil {
		return st, err
	}
	for _, list := range []*[]string{&st.Paths, &st.ValuesPaths} {
		out := make([]string, len(*list))
		for i, p := range *list {
			if out[i], err = render(p, "manifest "+id+" paths"); err != nil {
				return st, err
			}
		}
		*list = out
	}
	return st, nil
}

// resolveS3Artifact finds an AmazonS3 artifact's object on a worker and returns what
// `<+artifact.*>` publishes of it: bucketName, filePath, region, and metadata (url, eTag,
// size, lastModified). The object is recorded on the stage node.
func (s *deployment) resolveS3Artifact(ctx workflow.Context, a *plan.Artifact, render func(text, what string) (string, error)) (map[string]any, error) {
	in := *a.S3
	for _, f := range []struct {
		v    *string
		what string
	}{{&in.Bucket, "bucketName"}, {&in.Region, "region"}, {&in.FilePath, "filePath"}, {&in.FilePathRegex, "filePathRegex"}} {
		var err error
		if *f.v, err = render(*f.v, "artifact "+f.what); err != nil {
			return nil, err
		}
	}
	what := in.FilePath
	if what == "" {
		what = "newest match of " + in.FilePathRegex
	}
	ao := s.fetchOptions(ctx, fmt.Sprintf("find artifact %s in s3://%s (%s)", a.ID, in.Bucket, what))
	ao.TaskQueue = connectorQueue(ao.TaskQueue, in.Connector.Selectors)
	var got contract.S3Resolved
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), contract.ResolveS3Artifact,
		contract.S3ResolveInput{ExecutionID: s.in.ExecutionID, ID: a.ID, Artifact: in}).Get(ctx, &got); err != nil {
		return nil, err
	}
	s.tree.Artifact = got.URL + "#" + got.ETag
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("artifact %s: %s (ETag %s, %d bytes)", a.ID, got.URL, got.ETag, got.Size))
	return map[string]any{"type": a.Type, "identifier": a.ID, "connectorRef": a.ConnectorRef, "bucketName": got.Bucket,
		"filePath": got.FilePath, "filePathRegex": in.FilePathRegex, "region": got.Region,
		"metadata": map[string]any{"url": got.URL, "eTag": got.ETag, "size": got.Size, "lastModified": got.Modified,
			"bucketName": got.Bucket, "filePath": got.FilePath}}, nil
}

// resolveAmiArtifact finds an AmazonMachineImage artifact's image on a worker and returns
// what `<+artifact.*>` publishes of it: amiId (also image, what an Asg stage deploys),
// version (the image's name), versionRegex and metadata (its tags, ownerId, imageType).
func (s *deployment) resolveAmiArtifact(ctx workflow.Context, a *plan.Artifact, render renderFunc) (map[string]any, error) {
	in := *a.Ami
	in.Tags, in.Filters = slices.Clone(in.Tags), slices.Clone(in.Filters)
	type field struct {
		v    *string
		what string
	}
	fields := []field{{&in.Region, "region"}, {&in.Version, "version"}, {&in.VersionRegex, "versionRegex"}}
	for i := range in.Tags {
		fields = append(fields, field{&in.Tags[i].Value, "tag " + in.Tags[i].Name})
	}
	for i := range in.Filters {
		fields = append(fields, field{&in.Filters[i].Value, "filter " + in.Filters[i].Name})
	}
	for _, f := range fields {
		var err error
		if *f.v, err = render(*f.v, "artifact "+f.what); err != nil {
			return nil, err
		}
	}
	what := in.Version
	if what == "" {
		what = "newest match of " + in.VersionRegex
	}
	ao := s.fetchOptions(ctx, fmt.Sprintf("find artifact %s: image %s in %s", a.ID, what, in.Region))
	ao.TaskQueue = connectorQueue(ao.TaskQueue, in.Connector.Selectors)
	var got contract.AmiResolved
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), contract.ResolveAmiArtifact,
		contract.AmiResolveInput{ExecutionID: s.in.ExecutionID, ID: a.ID, Artifact: in}).Get(ctx, &got); err != nil {
		return nil, err
	}
	s.tree.Artifact = got.AmiID
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("artifact %s: image %s (%s) in %s", a.ID, got.AmiID, got.Version, in.Region))
	meta := map[string]any{}
	for k, v := range got.Metadata {
		meta[k] = v
	}
	return map[string]any{"type": a.Type, "identifier": a.ID, "connectorRef": a.ConnectorRef, "amiId": got.AmiID, "image": got.AmiID,
		"version": got.Version, "versionRegex": in.VersionRegex, "metadata": meta}, nil
}

// connectorQueue is the task queue of work a connector does: its delegate selectors' queue
// when it names some.
func connectorQueue(base string, selectors []string) string {
	if len(selectors) == 0 {
		return base
	}
	return SelectorQueue(base, selectors)
}

// fetchTimeout bounds one fetch of a Git-stored manifest (a clone of the repository).
const fetchTimeout = 10 * time.Minute

func tagMap(t map[string]string) map[string]any {
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

// deployInput renders the manifests for a Kubernetes step at the step's FQN. Manifests may use
// any expression the step could; `<+kubernetes.release.revision>` is left for the step, which
// knows the release it deploys.
func (s *deployment) deployInput(root map[string]any, fqn string) (*contract.DeployInput, error) {
	if s.target == nil {
		return nil, fmt.Errorf("Kubernetes steps need a Deployment stage with a service, environment and infrastructure")
	}
	data := make(map[string]any, len(root)+1)
	for k, v := range root {
		data[k] = v
	}
	data["kubernetes"] = map[string]any{"release": map[string]any{"revision": contract.ReleaseRevisionMarker}}
	scope := expressions.NewScope(data, fqn)
	renderFiles := func(fs []plan.File) ([]plan.File, error) {
		out := make([]plan.File, len(fs))
		for i, f := range fs {
			text := f.Text
			if expressions.Has(text) {
				r, err := expressions.RenderString(text, scope, expressions.Options{})
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %v", f.Path, err)
				}
				text = r
			}
			out[i] = plan.File{Path: f.Path, Text: text}
		}
		return out, nil
	}
	in := &contract.DeployInput{Namespace: s.target.namespace, ReleaseName: s.target.releaseName,
		Connector: s.target.connector, Rollback: strings.Contains(fqn, ".rollbackSteps.") || s.in.Mode == ModePipelineRollback,
		Aws: s.target.aws, Region: s.target.region, Cluster: s.target.cluster, AsgName: s.target.asgName, Artifact: s.target.artifact,
		RollbackOf: s.in.RollbackOf}
	if s.target.ssh != nil {
		files, err := renderFiles(s.target.configFiles)
		if err != nil {
			return nil, err
		}
		in.Ssh, in.ConfigFiles = s.target.ssh, files
		if in.Rollback {
			in.Artifact = s.target.rollbackArtifact // what the infrastructure had before
		}
		if r, ok := root["repeat"].(map[string]any); ok {
			in.Host, _ = hostOf(r["item"]).(string) // the loop over <+stage.output.hosts> this step runs in
		}
	}
	if c := s.target.custom; c != nil {
		// The script sees the stage's expressions as they are when its step runs.
		script, err := expressions.RenderString(c.Script, scope, expressions.Options{})
		if err != nil {
			return nil, fmt.Errorf("fetch-instances script of template %s: %v", c.Template, err)
		}
		custom := *c
		custom.Script = script
		in.Custom = &custom
	}
	ms := s.target.manifests
	if src, ok := s.target.stepManifests[strings.TrimPrefix(fqn, s.fqn+".")]; ok {
		ms, in.StepSource = []plan.Manifest{src}, true
	}
	for _, m := range ms {
		files, err := renderFiles(m.Files)
		if err != nil {
			return nil, err
		}
		values, err := renderFiles(m.Values)
		if err != nil {
			return nil, err
		}
		in.Manifests = append(in.Manifests, plan.Manifest{ID: m.ID, Type: m.Type, Files: files, Values: values, SkipVersioning: m.SkipVersioning, Folder: m.Folder})
	}
	return in, nil
}

// provisionerOf returns a Deployment stage's environment provisioner group (the first of its
// execution's nodes, marked by the compiler), nil when it has none or only rolls back.
func provisionerOf(st *plan.Node, mode string) *plan.Node {
	if st.Deploy == nil || len(st.Children) == 0 || !st.Children[0].Provisioner || mode == ModePipelineRollback {
		return nil
	}
	return st.Children[0]
}

// provisionerData is the provisioner group's data: `<+pipeline.stages.S.spec.environment.
// provisioner.*>`.
func (s *deployment) provisionerData() map[string]any {
	return child(child(s.data, "spec"), "environment")
}

// provision runs a Deployment stage's phases with its environment's provisioner between the
// environment and the infrastructure: service, artifact and environment first, then the
// provisioner's steps, whose outputs become `<+provisioner.*>`, then the infrastructure. A
// provisioner that fails leaves the infrastructure unrendered and the execution not started
// (the failure strategies already ran for its step).
func (s *deployment) provision(ctx, body workflow.Context, prov *plan.Node, t *Node) error {
	manifests, render, err := s.servicePhases(ctx)
	if err != nil {
		return err
	}
	data := s.provisionerData()
	s.runList(body, []*plan.Node{prov}, []*Node{t}, s.fqn+".spec.environment", data, s.forward)
	outputs := map[string]any{}
	if g, ok := data[prov.ID].(map[string]any); ok {
		steps, _ := g["steps"].(map[string]any)
		for _, c := range prov.Children { // in order: a later step's output wins
			if st, ok := steps[c.ID].(map[string]any); ok {
				if out, ok := st["output"].(map[string]any); ok {
					maps.Copy(outputs, out)
				}
			}
		}
	}
	s.root["provisioner"] = outputs
	if s.forward.stopped() || s.aborted || s.expired {
		return nil
	}
	return s.infrastructurePhase(ctx, s.in.Stage.Deploy, manifests, render)
}

// rollbackProvisioner runs the provisioner's rollback steps.
func (s *deployment) rollbackProvisioner(ctx workflow.Context, prov *plan.Node) {
	if len(prov.Rollback) == 0 || s.aborted || s.expired {
		return
	}
	t := s.tree.Children[0]
	s.runRollback(ctx, prov.Rollback, t.Children[len(t.Children)-1], s.fqn+".spec.environment."+prov.ID, child(s.provisionerData(), prov.ID))
}

// customInfrastructure is the infrastructure phase of a CustomDeployment infrastructure:
// its variables rendered and published as `<+infra.variables.*>`, the template its
// FetchInstanceScript step runs.
func (s *deployment) customInfrastructure(d *plan.Deployment, render renderFunc) error {
	sv, env, inf := d.Service, d.Environment, d.Infra
	vars := map[string]any{}
	for _, v := range inf.Custom.Variables {
		val, err := render(v.Value, "infrastructure variable "+v.Name)
		if err != nil {
			return err
		}
		vars[v.Name] = val
	}
	s.root["infra"] = map[string]any{"name": inf.Name, "infraIdentifier": inf.ID, "identifier": inf.ID, "type": inf.Type,
		"tags": tagMap(inf.Tags), "variables": vars}
	s.target = &deployTarget{custom: inf.Custom}
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("deploys service %s to environment %s (%s), infrastructure %s: deployment template %s",
		sv.ID, env.ID, env.Type, inf.ID, inf.Custom.Template))
	return nil
}

// instancesFetched is the outcome of a FetchInstanceScript step: the instances' host names
// become the stage's `<+stage.output.hosts>`, and each instance is `<+instance.*>` in the
// iterations of a loop over them.
func (s *deployment) instancesFetched(outputs map[string]any) {
	hosts, _ := outputs["hosts"].([]any)
	list, _ := outputs["instances"].([]any)
	byHost := map[string]any{}
	for _, i := range list {
		if inst, ok := i.(map[string]any); ok {
			byHost[fmt.Sprint(inst["hostName"])] = inst
		}
	}
	// Kept in the stage's root, which loop batches inherit.
	s.root[instancesKey] = byHost
	child(s.data, "output")["hosts"] = hosts
}

// instancesKey holds the fetched instances by host name in a stage's root.
const instancesKey = "gantryInstances"

// hostOf is the host a loop iteration's item names: the item, or the one host of a
// partition of one (partitionSize: 1).
func hostOf(item any) any {
	if one, ok := item.([]any); ok && len(one) == 1 {
		return one[0]
	}
	return item
}

// withInstance adds `<+instance.*>` to an iteration's root when its item is a fetched
// instance's host name.
func withInstance(root map[string]any, it iteration) map[string]any {
	byHost, _ := root[instancesKey].(map[string]any)
	if !it.HasItem || len(byHost) == 0 {
		return root
	}
	if inst, ok := byHost[fmt.Sprint(hostOf(it.Item))]; ok {
		root["instance"] = inst
	}
	return root
}

// sshInfrastructure is the infrastructure phase of a Pdc infrastructure: its hosts rendered,
// published as `<+stage.output.hosts>` and, in a loop over them, `<+instance.*>`.
func (s *deployment) sshInfrastructure(ctx workflow.Context, d *plan.Deployment, render renderFunc) error {
	sv, env, inf := d.Service, d.Environment, d.Infra
	hosts := make([]string, 0, len(inf.Ssh.Hosts))
	byHost := map[string]any{}
	for _, h := range inf.Ssh.Hosts {
		r, err := render(h, "infrastructure host")
		if err != nil {
			return err
		}
		if !hostKept(r, inf.Ssh.Only) {
			continue
		}
		hosts = append(hosts, r)
		byHost[r] = map[string]any{"name": r, "hostName": r,
			"host": map[string]any{"instanceName": r, "hostName": r, "properties": map[string]any{}}}
	}
	if inf.Ssh.Aws != nil {
		// Only SshWinRmAws infrastructures, which no earlier version ran, list their hosts.
		found, err := s.describeHosts(ctx, *inf.Ssh.Aws, render)
		if err != nil {
			return err
		}
		for _, h := range found {
			hosts = append(hosts, h.Address)
			props := map[string]any{}
			for k, v := range h.Tags {
				props[k] = v
			}
			byHost[h.Address] = map[string]any{"name": h.Address, "hostName": h.Address,
				"host": map[string]any{"instanceName": h.InstanceID, "instanceId": h.InstanceID, "hostName": h.Address,
					"privateIp": h.PrivateIP, "publicIp": h.PublicIP, "privateDnsName": h.PrivateDNS, "publicDnsName": h.PublicDNS, "properties": props}}
		}
	}
	list := make([]any, len(hosts))
	for i, h := range hosts {
		list[i] = h
	}
	s.root[instancesKey] = byHost
	child(s.data, "output")["hosts"] = list
	s.root["infra"] = map[string]any{"name": inf.Name, "infraIdentifier": inf.ID, "identifier": inf.ID, "type": inf.Type,
		"tags": tagMap(inf.Tags), "hosts": list, "credentialsRef": inf.Ssh.Credential.ID}
	sshInfra := *inf.Ssh
	sshInfra.Hosts = hosts
	s.target = &deployTarget{ssh: &sshInfra, configFiles: sv.ConfigFiles, artifact: sshArtifact(sv.Artifact, s.root)}
	if s.configFiles != nil {
		s.target.configFiles = s.configFiles // fetched in the service phase
	} else if len(sv.ConfigStores) > 0 {
		// Only services with Git-stored config files, which no earlier version ran, fetch them.
		fetched, err := s.fetchManifests(ctx, sv.ConfigStores, map[string]any{}, render)
		if err != nil {
			return err
		}
		files := slices.Clone(sv.ConfigFiles)
		for _, m := range fetched {
			files = append(files, m.Files...)
		}
		s.target.configFiles = files
	}
	if workflow.GetVersion(ctx, changeDeployedArtifact, workflow.DefaultVersion, 1) == 1 {
		if err := s.lastDeployed(ctx, contract.DeployedKey{Project: inf.Ssh.Project, Environment: env.ID, Infra: inf.ID, Service: sv.ID}); err != nil {
			return err
		}
	}
	s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("deploys service %s to environment %s (%s), infrastructure %s: %d hosts over SSH as %s",
		sv.ID, env.ID, env.Type, inf.ID, len(hosts), inf.Ssh.Credential.User))
	return nil
}

// hostKept reports whether a host passes a HostNames filter (none: every host), by its name
// with or without its port.
func hostKept(host string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	name := host
	if i := strings.LastIndex(host, ":"); i > 0 && (strings.Count(host, ":") == 1 || strings.HasPrefix(host, "[")) {
		name = strings.Trim(host[:i], "[]") // host:port, [v6]:port
	}
	return slices.Contains(only, host) || slices.Contains(only, name)
}

// describeHosts lists an SshWinRmAws infrastructure's instances on a worker, its region and
// tag values rendered first.
func (s *deployment) describeHosts(ctx workflow.Context, h plan.AwsHosts, render renderFunc) ([]contract.Host, error) {
	var err error
	if h.Region, err = render(h.Region, "infrastructure region"); err != nil {
		return nil, err
	}
	tags := make(map[string]string, len(h.Tags))
	for _, k := range slices.Sorted(maps.Keys(h.Tags)) {
		if tags[k], err = render(h.Tags[k], "awsInstanceFilter tag "+k); err != nil {
			return nil, err
		}
	}
	h.Tags = tags
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, "list the EC2 instances of "+h.Region))
	var found []contract.Host
	if err := workflow.ExecuteActivity(actx, contract.DescribeHosts, contract.DescribeHostsInput{ExecutionID: s.in.ExecutionID, Hosts: h}).Get(ctx, &found); err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no running EC2 instance in %s matches the infrastructure's awsInstanceFilter (tags %v, VPCs %v)", h.Region, h.Tags, h.Vpcs)
	}
	return found, nil
}

// sshArtifact is the primary artifact as an Ssh stage's Command steps fetch it: the object
// or image the artifact phase resolved, with the connector that reads it.
func sshArtifact(a *plan.Artifact, root map[string]any) *contract.DeployArtifact {
	art, ok := root["artifact"].(map[string]any)
	if a == nil || !ok {
		return nil
	}
	out := &contract.DeployArtifact{Type: a.Type, Image: fmt.Sprint(art["image"]), Tag: fmt.Sprint(art["tag"]), Registry: a.Connector}
	if a.S3 != nil {
		conn := a.S3.Connector
		out.Image, out.Aws = "", &conn
		out.Bucket, out.Key, out.Region = fmt.Sprint(art["bucketName"]), fmt.Sprint(art["filePath"]), fmt.Sprint(art["region"])
	}
	if md, ok := art["metadata"].(map[string]any); ok && a.Type == "CustomArtifact" {
		out.URL, _ = md["url"].(string) // where a listed version is downloaded from
	}
	return out
}

// lastDeployed finds what another execution last deployed with the stage's service to its
// infrastructure: `<+rollbackArtifact.*>` (null when nothing was), and what the stage's
// rollback steps copy. The stage records its own artifact when it succeeds.
func (s *deployment) lastDeployed(ctx workflow.Context, key contract.DeployedKey) error {
	key.Execution = s.in.ExecutionID
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("find what %s was last deployed with to %s", key.Service, key.Infra)))
	var last *contract.Deployed
	if err := workflow.ExecuteActivity(actx, contract.LastDeployed, key).Get(ctx, &last); err != nil {
		return err
	}
	s.root["rollbackArtifact"] = nil
	if last != nil {
		s.root["rollbackArtifact"], s.target.rollbackArtifact = last.Published, last.Artifact
		s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("rollback artifact: %s (deployed by %s)", last.Artifact, last.Execution))
	}
	key.Execution = ""
	s.target.deployed = &key
	return nil
}

// recordDeployed records the artifact of an Ssh stage that succeeded.
func (s *deployment) recordDeployed(ctx workflow.Context) {
	d := s.target
	if d == nil || d.deployed == nil || d.artifact == nil {
		return
	}
	published, _ := s.root["artifact"].(map[string]any)
	in := contract.RecordDeployedInput{Key: *d.deployed, Deployed: contract.Deployed{Execution: s.in.ExecutionID, Artifact: d.artifact, Published: published}}
	actx := workflow.WithActivityOptions(ctx, s.fetchOptions(ctx, fmt.Sprintf("record what %s was deployed with to %s", in.Key.Service, in.Key.Infra)))
	if err := workflow.ExecuteActivity(actx, contract.RecordDeployed, in).Get(ctx, nil); err != nil {
		// The deployment stands; only a later rollback cannot find this artifact.
		s.tree.Notes = append(s.tree.Notes, "the deployed artifact was not recorded, a later rollback restores an older one: "+err.Error())
	}
}
