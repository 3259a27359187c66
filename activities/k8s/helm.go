package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/stepspec"
)

// The NativeHelm steps (HelmDeploy, HelmRollback, HelmDelete) manage a Helm release with the
// Helm SDK's action package, so the release history lives in the cluster as Helm keeps it
// (Secrets in the release's namespace) and the `helm` CLI sees and can act on the same
// releases. Each revision a step makes carries the execution in a release label, which is how
// HelmRollback finds the release before this execution's, however often a step was retried.

// LabelHelmExecution marks the Helm revisions an execution made (a hash of its ID: label
// values are at most 63 characters).
const LabelHelmExecution = "gantry.io/execution"

// helmHistoryMax keeps as many revisions as `helm upgrade` does by default.
const helmHistoryMax = 10

// helmTimeout bounds a Helm wait when the step has no timeout.
const helmTimeout = 10 * time.Minute

func executionLabel(exec string) string {
	sum := sha256.Sum256([]byte(exec))
	return hex.EncodeToString(sum[:20])
}

// helmConfig is the Helm SDK's configuration for the step's cluster and namespace, logging to
// the step's log.
func (s *stepRun) helmConfig() (*action.Configuration, error) {
	cfg := new(action.Configuration)
	getter := &restGetter{c: s.c, namespace: s.in.Namespace}
	if err := cfg.Init(getter, s.in.Namespace, "secret", func(format string, v ...any) { s.logf(format, v...) }); err != nil {
		return nil, contract.Fail(contract.Unknown, "connector %s: Helm: %v", s.in.Connector.ID, err)
	}
	return cfg, nil
}

// helmHistory returns the release's revisions, oldest first (none when it does not exist).
func (s *stepRun) helmHistory(cfg *action.Configuration) ([]*release.Release, error) {
	h := action.NewHistory(cfg)
	h.Max = 256
	revs, err := h.Run(s.helmName())
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(s.ctx, err, "read the history of Helm release %s in namespace %s", s.helmName(), s.in.Namespace)
	}
	slices.SortFunc(revs, func(a, b *release.Release) int { return a.Version - b.Version })
	return revs, nil
}

// helmChart loads the service's HelmChart manifest with its values: the chart's own, its
// valuesPaths files, then the service's Values manifests (later ones win).
func (s *stepRun) helmChart(revision int) (*chart.Chart, map[string]any, error) {
	if err := s.expandSecrets(); err != nil {
		return nil, nil, err
	}
	var values []manifests.File
	var chartManifest int = -1
	for i, m := range s.in.Manifests {
		switch m.Type {
		case "Values":
			values = append(values, toFiles(m.Files, revision)...)
		case "HelmChart":
			if chartManifest < 0 {
				chartManifest = i
			}
		}
	}
	if chartManifest < 0 {
		return nil, nil, contract.Fail(contract.Verification, "the service has no HelmChart manifest: Helm steps deploy a chart")
	}
	m := s.in.Manifests[chartManifest]
	ch, err := manifests.LoadChart(toFiles(m.Files, revision), m.Folder)
	if err != nil {
		return nil, nil, contract.Fail(contract.Verification, "manifest %s: %s", m.ID, s.mask.Apply(err.Error()))
	}
	vals, err := manifests.HelmValues(append(toFiles(m.Values, revision), values...))
	if err != nil {
		return nil, nil, contract.Fail(contract.Verification, "manifest %s: %s", m.ID, s.mask.Apply(err.Error()))
	}
	return ch, vals, nil
}

func (s *stepRun) helmWaitTimeout() time.Duration {
	if s.timeout > 0 {
		return s.timeout
	}
	return helmTimeout
}

// helmDeploy installs the release, or upgrades it when it has a history, and waits for its
// resources to be ready unless skipSteadyStateCheck. A revision left pending by an earlier
// attempt of this execution (a worker that died mid-deploy) is marked failed first, so the
// retry can proceed; one left pending by someone else is not touched.
func (s *stepRun) helmDeploy(sp stepspec.HelmDeploySpec) (map[string]any, error) {
	cfg, err := s.helmConfig()
	if err != nil {
		return nil, err
	}
	revs, err := s.helmHistory(cfg)
	if err != nil {
		if !sp.IgnoreReleaseHistFailStatus.Bool() {
			return nil, err
		}
		s.logf("ignoring (ignoreReleaseHistFailStatus): %s", contract.Classify(err).Message)
	}
	mine := executionLabel(s.exec)
	prev := 0
	if n := len(revs); n > 0 {
		last := revs[n-1]
		if last.Info.Status.IsPending() {
			if last.Labels[LabelHelmExecution] != mine {
				return nil, contract.Fail(contract.Unknown, "Helm release %s in namespace %s: revision %d is %s, another operation is in progress; wait for it or roll the release back (`helm rollback %s -n %s`)",
					s.helmName(), s.in.Namespace, last.Version, last.Info.Status, s.helmName(), s.in.Namespace)
			}
			last.SetStatus(release.StatusFailed, "left pending by an attempt of this execution that did not finish; retried")
			if err := cfg.Releases.Update(last); err != nil {
				return nil, classify(s.ctx, err, "mark Helm release %s revision %d failed", s.helmName(), last.Version)
			}
			s.logf("revision %d was left pending by an earlier attempt of this execution: marked failed", last.Version)
		}
		prev = s.lastBefore(revs, mine)
	}
	ch, vals, err := s.helmChart(len(revs) + 1)
	if err != nil {
		return nil, err
	}
	wait := !sp.SkipSteadyStateCheck.Bool()
	labels := map[string]string{LabelHelmExecution: mine}
	description := fmt.Sprintf("Gantry execution %s, step %s", s.exec, s.path)
	verb := "install"
	if len(revs) > 0 {
		verb = "upgrade to"
	}
	s.logf("%s chart %s %s as release %s in namespace %s (wait: %v)", verb, ch.Name(), ch.Metadata.Version, s.helmName(), s.in.Namespace, wait)
	// Steady state is watched as the K8s steps watch it (rollout status of every workload and
	// Job of the release), not with Helm's polling wait: the step ends as soon as the release
	// is ready, and a failed rollout fails it at once.
	var rel *release.Release
	if len(revs) == 0 {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.Timeout = s.helmName(), s.in.Namespace, s.helmWaitTimeout()
		in.Labels, in.Description = labels, description
		if s.side != nil {
			in.PostRenderer = s.side
		}
		if rel, err = in.RunWithContext(s.steadyCtx, ch, vals); err == nil && wait {
			err = s.helmSteady(cfg, rel)
		}
		if err != nil && !sp.SkipCleanup.Bool() && s.ctx.Err() == nil {
			// A release whose first install failed would make the next install refuse the name.
			if _, uerr := action.NewUninstall(cfg).Run(s.helmName()); uerr == nil {
				s.logf("uninstalled the failed first install of release %s (skipCleanup keeps it)", s.helmName())
			}
		}
	} else {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.Timeout, up.MaxHistory = s.in.Namespace, s.helmWaitTimeout(), helmHistoryMax
		up.Labels, up.Description = labels, description
		if s.side != nil {
			up.PostRenderer = s.side
		}
		if rel, err = up.RunWithContext(s.steadyCtx, s.helmName(), ch, vals); err == nil && wait {
			err = s.helmSteady(cfg, rel)
		}
	}
	if err != nil {
		return nil, s.helmFailure(err, "deploy chart %s %s as Helm release %s in namespace %s", ch.Name(), ch.Metadata.Version, s.helmName(), s.in.Namespace)
	}
	s.logf("release %s revision %d: %s", rel.Name, rel.Version, rel.Info.Status)
	return map[string]any{"releaseName": rel.Name, "namespace": rel.Namespace, "newReleaseVersion": rel.Version,
		"prevReleaseVersion": prev, "releaseRevision": rel.Version, "chartName": ch.Name(), "chartVersion": ch.Metadata.Version,
		"appVersion": ch.Metadata.AppVersion, "status": rel.Info.Status.String()}, nil
}

// helmSteady waits until the release's workloads and Jobs reach steady state. A release that
// does not is marked failed, as `helm upgrade --wait` leaves it.
func (s *stepRun) helmSteady(cfg *action.Configuration, rel *release.Release) error {
	objs, err := manifests.Split("release "+rel.Name, []byte(rel.Manifest))
	if err != nil {
		return contract.Fail(contract.Unknown, "read the manifest of Helm release %s revision %d: %v", rel.Name, rel.Version, err)
	}
	var mapped []*object
	for _, o := range objs {
		m, err := s.mapObject(o)
		if err != nil {
			return err
		}
		mapped = append(mapped, m)
	}
	err = s.waitSteady(mapped, true)
	if err != nil && s.ctx.Err() == nil {
		rel.SetStatus(release.StatusFailed, "steady state not reached: "+s.mask.Apply(contract.Classify(err).Message))
		if uerr := cfg.Releases.Update(rel); uerr != nil {
			s.logf("could not mark release %s revision %d failed: %v", rel.Name, rel.Version, uerr)
		}
	}
	return err
}

// lastBefore is the revision the release had before this execution first changed it: the last
// revision below the first one labelled with this execution (the last one, if none is).
func (s *stepRun) lastBefore(revs []*release.Release, mine string) int {
	prev := 0
	for _, r := range revs {
		if r.Labels[LabelHelmExecution] == mine {
			return prev
		}
		prev = r.Version
	}
	return prev
}

// changedBy says whether an execution (its label) made any of the revisions.
func changedBy(revs []*release.Release, mine string) bool {
	return slices.ContainsFunc(revs, func(r *release.Release) bool { return r.Labels[LabelHelmExecution] == mine })
}

// uninstall uninstalls the release, waiting for its resources to go when asked to.
func (s *stepRun) uninstall(cfg *action.Configuration, wait bool) error {
	un := action.NewUninstall(cfg)
	un.Wait, un.Timeout = wait, s.helmWaitTimeout()
	if _, err := un.Run(s.helmName()); err != nil {
		return s.helmFailure(err, "uninstall Helm release %s", s.helmName())
	}
	return nil
}

// rollbackRelease rolls the release back to the revision it had before this execution changed
// it; a release this execution installed is uninstalled; one it never changed is left alone.
// Each waits for steady state (or for the resources to go) unless skipSteadyStateCheck.
func (s *stepRun) rollbackRelease(sp stepspec.HelmRollbackSpec) (map[string]any, error) {
	cfg, err := s.helmConfig()
	if err != nil {
		return nil, err
	}
	revs, err := s.helmHistory(cfg)
	if err != nil {
		return nil, err
	}
	mine := executionLabel(s.exec)
	if of := s.in.RollbackOf; of != "" {
		// A post-deployment rollback undoes the earlier execution's revision, which must still
		// be the deployed one.
		if mine = executionLabel(of); len(revs) == 0 || revs[len(revs)-1].Labels[LabelHelmExecution] != mine {
			return nil, contract.Fail(contract.Unknown, "Helm release %s: its deployed revision was not made by execution %s, so that deployment is no longer what runs; nothing was rolled back", s.helmName(), of)
		}
	}
	if !changedBy(revs, mine) {
		s.logf("release %s has no revision made by this execution: nothing to roll back", s.helmName())
		return map[string]any{"releaseName": s.helmName(), "rolledBack": false}, nil
	}
	prev := s.lastBefore(revs, mine)
	if prev == 0 && s.in.RollbackOf != "" {
		return nil, contract.Fail(contract.Unknown, "Helm release %s has no revision before execution %s's to restore; nothing was rolled back", s.helmName(), s.in.RollbackOf)
	}
	if prev == 0 {
		if err := s.uninstall(cfg, !sp.SkipSteadyStateCheck.Bool()); err != nil {
			return nil, err
		}
		s.logf("release %s was installed by this execution: uninstalled", s.helmName())
		return map[string]any{"releaseName": s.helmName(), "rolledBack": true, "rollbackVersion": 0}, nil
	}
	rb := action.NewRollback(cfg)
	rb.Version, rb.Timeout, rb.MaxHistory = prev, s.helmWaitTimeout(), helmHistoryMax
	s.logf("roll release %s back to revision %d", s.helmName(), prev)
	if err := rb.Run(s.helmName()); err != nil {
		return nil, s.helmFailure(err, "roll Helm release %s back to revision %d", s.helmName(), prev)
	}
	rel, err := cfg.Releases.Last(s.helmName())
	if err != nil {
		return nil, classify(s.ctx, err, "read Helm release %s", s.helmName())
	}
	if !sp.SkipSteadyStateCheck.Bool() {
		if err := s.helmSteady(cfg, rel); err != nil {
			return nil, s.helmFailure(err, "roll Helm release %s back to revision %d", s.helmName(), prev)
		}
	}
	now := rel.Version
	return map[string]any{"releaseName": s.helmName(), "rolledBack": true, "rollbackVersion": prev, "newReleaseVersion": now}, nil
}

// helmDelete uninstalls a release (the step's releaseName, or the stage's), as `helm
// uninstall` does; dryRun only says what would go.
func (s *stepRun) helmDelete(sp stepspec.HelmDeleteSpec) (map[string]any, error) {
	name := sp.ReleaseName
	if name == "" {
		name = s.helmName()
	}
	cfg, err := s.helmConfig()
	if err != nil {
		return nil, err
	}
	un := action.NewUninstall(cfg)
	un.DryRun = sp.DryRun.Bool()
	res, err := un.Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, contract.Fail(contract.Verification, "Helm release %s does not exist in namespace %s", name, s.in.Namespace)
	}
	if err != nil {
		return nil, s.helmFailure(err, "uninstall Helm release %s", name)
	}
	verb := "uninstalled"
	if un.DryRun {
		verb = "would uninstall (dry run)"
	}
	if res != nil && res.Release != nil {
		s.logf("%s release %s (revision %d, chart %s)", verb, name, res.Release.Version, res.Release.Chart.Metadata.Name)
	}
	return map[string]any{"releaseName": name, "dryRun": un.DryRun}, nil
}

// helmFailure categorizes a Helm SDK error: API errors as the K8s steps do, a wait that ran
// out as Timeout, a chart that does not render (template errors name the file and line) as
// Verification.
func (s *stepRun) helmFailure(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	msg := s.mask.Apply(err.Error())
	switch {
	case s.ctx.Err() != nil:
		return s.ctx.Err()
	case s.steadyCtx.Err() != nil || strings.Contains(msg, "timed out waiting") || strings.Contains(msg, "context deadline exceeded"):
		return contract.Fail(contract.Timeout, "%s: not ready in time: %s", what, msg)
	case strings.Contains(msg, "template:") || strings.Contains(msg, "parse error") || strings.Contains(msg, "unable to build kubernetes objects"):
		return contract.Fail(contract.Verification, "%s: %s", what, msg)
	}
	return classify(s.ctx, err, "%s", what)
}

// restGetter gives the Helm SDK the step's cluster connection (any connector type), its
// discovery cache and mapper (discovered once per step, shared with the K8s code), and the
// namespace.
type restGetter struct {
	c         *client
	namespace string
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.c.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.c.disc, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.c.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}
