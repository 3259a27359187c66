package workflows

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/status"
)

// What a target's ledger keeps (variables for the tests): its newest deployments in full, its
// newest successful ones (what a rollback restores), a summary of every day, and how many
// deployments a run takes before it continues as new.
var (
	ledgerRecent    = 100
	ledgerSuccesses = 5
	ledgerDays      = 3660 // ten years
	ledgerPerRun    = 500
)

// Ledger is a target's deployments ledger: each Deployment stage that ends signals its
// contract.DeploymentRecord (contract.SignalLedger, through SignalWithStart);
// contract.QueryLedger answers with the whole contract.LedgerState, and the memo
// (contract.MemoLedger) holds its summary for listings. A record of a deployment already kept
// (the same execution and stage) is applied once: a repeated delivery changes nothing, and a
// later outcome (a pipeline rollback of a deployment that had succeeded) amends it. The
// workflow never ends by itself; it continues as new with its state every ledgerPerRun
// records, so its history stays small however many deployments the target sees.
func Ledger(ctx workflow.Context, st contract.LedgerState) error {
	if err := workflow.SetQueryHandler(ctx, contract.QueryLedger, func() (contract.LedgerState, error) { return st, nil }); err != nil {
		return err
	}
	if st.Total > 0 {
		if err := upsertLedgerMemo(ctx, &st); err != nil {
			return err
		}
	}
	ch := workflow.GetSignalChannel(ctx, contract.SignalLedger)
	for n := 0; n < ledgerPerRun; {
		var r contract.DeploymentRecord
		ch.Receive(ctx, &r)
		changed := LedgerApply(&st, r)
		for ch.ReceiveAsync(&r) { // a burst costs one memo update
			changed = LedgerApply(&st, r) || changed
			n++
		}
		n++
		if changed {
			if err := upsertLedgerMemo(ctx, &st); err != nil {
				return err
			}
		}
	}
	for { // records delivered with the last task belong to this run
		var r contract.DeploymentRecord
		if !ch.ReceiveAsync(&r) {
			break
		}
		LedgerApply(&st, r)
	}
	return workflow.NewContinueAsNewError(ctx, contract.LedgerName, st)
}

func upsertLedgerMemo(ctx workflow.Context, st *contract.LedgerState) error {
	return workflow.UpsertMemo(ctx, map[string]any{contract.MemoLedger: LedgerSummaryOf(st)})
}

// LedgerSummaryOf is what a target's memo says: its last deployment and what runs there.
func LedgerSummaryOf(st *contract.LedgerState) contract.LedgerSummary {
	s := contract.LedgerSummary{Key: st.Key, Total: st.Total}
	if n := len(st.Recent); n > 0 {
		last := st.Recent[n-1]
		s.Last, s.ServiceName, s.EnvironmentType, s.DeploymentType = &last, last.ServiceName, last.EnvironmentType, last.DeploymentType
	}
	if n := len(st.Successes); n > 0 {
		cur := st.Successes[n-1]
		s.Current = &cur
	}
	return s
}

// LedgerApply applies one record to a target's state and reports whether it changed it. A
// record of a deployment kept already replaces it when its outcome differs (its times,
// artifact and trigger stay the first record's; RolledBackAt says when it was rolled back).
func LedgerApply(st *contract.LedgerState, r contract.DeploymentRecord) bool {
	if st.Key == (contract.DeploymentKey{}) {
		st.Key = r.Key
	}
	if i := slices.IndexFunc(st.Recent, func(o contract.DeploymentRecord) bool { return sameDeployment(o, r) }); i >= 0 {
		old := st.Recent[i]
		if old.Outcome == r.Outcome {
			return false
		}
		amended := old
		amended.Outcome, amended.Status = r.Outcome, r.Status
		if r.Outcome == contract.OutcomeRolledBack {
			amended.RolledBackAt = r.Ended
		}
		undone := old.Outcome == contract.OutcomeSucceeded && amended.Outcome != contract.OutcomeSucceeded
		if undone {
			amended.RestoredSeconds = 0 // it restored nothing after all
		}
		if d := countDay(st, old, -1); d != nil && undone && old.RestoredSeconds > 0 {
			d.RestoreSeconds -= old.RestoredSeconds
			d.RestoreCount--
		}
		countDay(st, amended, +1)
		st.Recent[i] = amended
		if undone {
			st.Successes = slices.DeleteFunc(st.Successes, func(o contract.DeploymentRecord) bool { return sameDeployment(o, old) })
			// The newest deployment failed after all: the target fails since the failure the
			// success seemed to end, or since the rollback.
			if i == len(st.Recent)-1 {
				at := cmp.Or(amended.RolledBackAt, amended.Ended)
				if old.RestoredSeconds > 0 {
					at = old.Ended.Add(-time.Duration(old.RestoredSeconds) * time.Second)
				}
				st.FailingFor = &at
			}
		}
		return true
	}
	st.Total++
	r.RestoredSeconds = 0
	day := countDay(st, r, +1)
	switch r.Outcome {
	case contract.OutcomeSucceeded:
		if st.FailingFor != nil && day != nil {
			if d := r.Ended.Sub(*st.FailingFor); d >= 0 {
				r.RestoredSeconds = int64(d / time.Second)
				day.RestoreSeconds += r.RestoredSeconds
				day.RestoreCount++
			}
		}
		st.FailingFor = nil
		st.Successes = append(st.Successes, r)
		if len(st.Successes) > ledgerSuccesses {
			st.Successes = slices.Delete(st.Successes, 0, len(st.Successes)-ledgerSuccesses)
		}
	case contract.OutcomeFailed, contract.OutcomeRolledBack:
		if st.FailingFor == nil {
			at := r.Ended
			st.FailingFor = &at
		}
	}
	st.Recent = append(st.Recent, r)
	if len(st.Recent) > ledgerRecent {
		st.Recent = slices.Delete(st.Recent, 0, len(st.Recent)-ledgerRecent)
	}
	return true
}

func sameDeployment(a, b contract.DeploymentRecord) bool {
	return a.Execution == b.Execution && a.Stage == b.Stage
}

// countDay adds (sign +1) or removes (-1) a deployment from the day it ended, and returns that
// day (nil when it is older than the days kept).
func countDay(st *contract.LedgerState, r contract.DeploymentRecord, sign int) *contract.LedgerDay {
	key := r.Ended.UTC().Format(time.DateOnly)
	i, found := slices.BinarySearchFunc(st.Days, key, func(d contract.LedgerDay, k string) int { return strings.Compare(d.Day, k) })
	if !found {
		if sign < 0 || len(st.Days) >= ledgerDays && i == 0 {
			return nil
		}
		st.Days = slices.Insert(st.Days, i, contract.LedgerDay{Day: key})
		if len(st.Days) > ledgerDays {
			st.Days = st.Days[1:]
			i--
		}
	}
	d := &st.Days[i]
	d.Deployed += sign
	switch r.Outcome {
	case contract.OutcomeSucceeded:
		d.Succeeded += sign
		if !r.CommitTime.IsZero() && r.Ended.After(r.CommitTime) {
			d.LeadSeconds += int64(sign) * int64(r.Ended.Sub(r.CommitTime)/time.Second)
			d.LeadCount += sign
		}
	case contract.OutcomeFailed:
		d.Failed += sign
	case contract.OutcomeRolledBack:
		d.Failed += sign
		d.RolledBack += sign
	case contract.OutcomeAborted:
		d.Aborted += sign
	case contract.OutcomeBlocked:
		d.Blocked += sign
	}
	return d
}

// recordLedger records a Deployment stage's end in its target's ledger: what it deployed,
// where, for whom and how it ended. A stage that never began (skipped) records nothing; a
// pipeline rollback of the stage amends its record to rolled back. The deployment stands
// whether or not the record is made: a failure to record is a note on the stage.
func (s *stageRun) recordLedger(ctx workflow.Context) {
	d := s.in.Stage.Deploy
	if d == nil || d.Service == nil || s.in.Batch != nil {
		return
	}
	r, ok := s.deploymentRecord()
	if !ok || workflow.GetVersion(ctx, changeLedger, workflow.DefaultVersion, 1) < 1 {
		return
	}
	if of := s.in.RollbackOf; of != "" {
		// A post-deployment rollback amends the deployment it undid, once it has undone it.
		if !s.tree.Status.Positive() {
			return
		}
		r.Execution, r.Outcome = of, contract.OutcomeRolledBack
	}
	// An aborted stage records its end too.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, s.dep.fetchOptions(ctx, fmt.Sprintf("record the deployment of %s to %s in the ledger", r.Key.Service, r.Key.Infra)))
	in := contract.RecordDeploymentInput{DeploymentRecord: r, Instances: s.instanceTarget(r)}
	if err := workflow.ExecuteActivity(actx, contract.RecordDeployment, in).Get(dctx, nil); err != nil {
		s.tree.Notes = append(s.tree.Notes, "the deployment was not recorded in the deployments ledger: "+err.Error())
	}
}

// deploymentRecord is the stage's ledger record, from what its phases published (the plan's
// definitions where a phase did not run); false for a stage that never began.
func (s *stageRun) deploymentRecord() (contract.DeploymentRecord, bool) {
	d := s.in.Stage.Deploy
	st := s.tree.Status
	if st == status.Skipped || st == status.NotStarted || st == status.Running || s.tree.EndedAt == nil {
		return contract.DeploymentRecord{}, false
	}
	pub := func(root, key, fallback string) string {
		m, _ := s.root[root].(map[string]any)
		if v, ok := m[key].(string); ok && v != "" {
			return v
		}
		return fallback
	}
	var envID, infraID string
	if d.Environment != nil {
		envID = d.Environment.ID
	}
	if d.Infra != nil {
		infraID = d.Infra.ID
	}
	r := contract.DeploymentRecord{
		Key: contract.DeploymentKey{Project: cmp.Or(d.Project, "default/default"), Service: pub("service", "identifier", d.Service.ID),
			Environment: pub("env", "identifier", envID), Infra: pub("infra", "identifier", infraID)},
		ServiceName:    pub("service", "name", d.Service.Name),
		DeploymentType: d.Type, Execution: s.in.ExecutionID, Stage: s.in.Stage.ID, StageName: s.in.Stage.Name,
		Status: string(st), Ended: *s.tree.EndedAt,
	}
	if d.Environment != nil {
		r.EnvironmentName, r.EnvironmentType = pub("env", "name", d.Environment.Name), pub("env", "type", d.Environment.Type)
	}
	if d.Infra != nil {
		r.InfraName = pub("infra", "name", d.Infra.Name)
	}
	if s.tree.StartedAt != nil {
		r.Started = *s.tree.StartedAt
	}
	if p, ok := s.root["pipeline"].(map[string]any); ok {
		r.Pipeline = expressions.ToString(p["identifier"])
		r.Trigger = expressions.ToString(p["triggerType"])
		if by, ok := p["triggeredBy"].(map[string]any); ok {
			r.StartedBy = expressions.ToString(by["name"])
		}
		if n, ok := p["sequenceId"].(int64); ok {
			r.Sequence = n
		} else if f, ok := p["sequenceId"].(float64); ok {
			r.Sequence = int64(f)
		}
	}
	r.Outcome = outcomeOf(st, s.in.Mode == ModePipelineRollback, s.stageRollback && len(s.in.Stage.Rollback) > 0)
	r.Artifact = ledgerArtifact(s.root)
	r.Commit, r.CommitTime = commitOf(s.root)
	if t := s.dep.target; t != nil {
		r.Namespace, r.Release, r.Cluster, r.Asg = t.namespace, t.releaseName, t.cluster, t.asgName
		if t.ssh != nil {
			r.Hosts = slices.Clone(t.ssh.Hosts)
		}
	}
	return r, true
}

// instanceTarget is where the target's instances are read, nil where Gantry does not read
// them (contract.InstancesTracked) or the stage never rendered its infrastructure.
func (s *stageRun) instanceTarget(r contract.DeploymentRecord) *contract.InstanceTarget {
	t := s.dep.target
	if t == nil || !contract.InstancesTracked(r.DeploymentType) || r.Outcome == contract.OutcomeBlocked {
		return nil
	}
	it := &contract.InstanceTarget{Key: r.Key, DeploymentType: r.DeploymentType, Execution: s.in.ExecutionID}
	if r.Artifact != nil && s.in.RollbackOf == "" {
		it.Version = r.Artifact.Version
	}
	switch r.DeploymentType {
	case "Kubernetes", "NativeHelm":
		conn := t.connector
		it.Connector, it.Namespace, it.Release = &conn, t.namespace, t.releaseName
	case "ECS", "Asg", "AwsLambda":
		if t.aws == nil {
			return nil
		}
		it.Aws, it.Region, it.Cluster, it.Asg = t.aws, t.region, t.cluster, t.asgName
		it.Service = s.manifestField("EcsServiceDefinition", "serviceName")
		it.Function = s.manifestField("AwsLambdaFunctionDefinition", "functionName")
		it.Alias = s.manifestField("AwsLambdaFunctionAliasDefinition", "name")
		if (r.DeploymentType == "ECS" && it.Service == "") || (r.DeploymentType == "AwsLambda" && it.Function == "") || (r.DeploymentType == "Asg" && it.Asg == "") {
			return nil // the stage never named what it deployed
		}
	default:
		if t.ssh == nil {
			return nil
		}
		it.Hosts = slices.Clone(t.ssh.Hosts)
	}
	return it
}

// manifestField is a top-level field of the stage's first manifest of a type (its request
// fields, matched case-insensitively as the AWS steps match them), rendered as the stage ends;
// empty when there is none or it does not render.
func (s *stageRun) manifestField(typ, field string) string {
	for _, m := range s.dep.target.manifests {
		if m.Type != typ || len(m.Files) == 0 {
			continue
		}
		text, err := expressions.RenderString(m.Files[0].Text, expressions.NewScope(s.root, s.fqn), expressions.Options{})
		if err != nil {
			return ""
		}
		var fields map[string]any
		if yaml.Unmarshal([]byte(text), &fields) != nil {
			return ""
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) { // sorted: a workflow's choices are deterministic
			if str, ok := fields[k].(string); ok && strings.EqualFold(k, field) {
				return str
			}
		}
		return ""
	}
	return ""
}

// outcomeOf is a stage status as the ledger words it.
func outcomeOf(st status.Status, pipelineRollback, stageRolledBack bool) string {
	switch {
	case pipelineRollback:
		return contract.OutcomeRolledBack
	case st == status.Succeeded || st == status.IgnoreFailed:
		return contract.OutcomeSucceeded
	case st == status.Aborted:
		return contract.OutcomeAborted
	case st == status.FreezeFailed:
		return contract.OutcomeBlocked
	case stageRolledBack:
		return contract.OutcomeRolledBack
	}
	return contract.OutcomeFailed
}

// ledgerArtifact is the primary artifact as the artifact phase published it (nil: none).
func ledgerArtifact(root map[string]any) *contract.LedgerArtifact {
	art, ok := root["artifact"].(map[string]any)
	if !ok {
		return chartArtifact(root)
	}
	str := func(k string) string { v, _ := art[k].(string); return v }
	a := &contract.LedgerArtifact{Type: str("type"), Image: str("image"), Tag: str("tag"), Digest: str("digest")}
	switch {
	case str("amiId") != "":
		a.Version = cmp.Or(str("version"), str("amiId"))
	case str("bucketName") != "":
		a.Image, a.Version = "s3://"+str("bucketName")+"/"+str("filePath"), str("filePath")
	default:
		a.Version = cmp.Or(str("version"), a.Tag, a.Image)
	}
	return a
}

// chartArtifact is a service without an artifact whose chart comes from a chart repository:
// the chart and the version pulled.
func chartArtifact(root map[string]any) *contract.LedgerArtifact {
	ms, _ := root["manifests"].(map[string]any)
	for _, id := range sortedKeys(ms) {
		m, _ := ms[id].(map[string]any)
		if v, ok := m["chartVersion"].(string); ok && v != "" {
			name, _ := m["chartName"].(string)
			return &contract.LedgerArtifact{Type: "HelmChart", Image: name, Tag: v, Version: v}
		}
	}
	return nil
}

// commitOf is the commit the run built from and its time, as far as the run knows: the
// trigger's event (the pushed head commit and its timestamp), else the CI codebase's commit.
func commitOf(root map[string]any) (string, time.Time) {
	trig, _ := root["trigger"].(map[string]any)
	sha, _ := trig["commitSha"].(string)
	if sha == "" {
		cb, _ := root["codebase"].(map[string]any)
		sha, _ = cb["commitSha"].(string)
	}
	return sha, commitTime(root["eventPayload"], sha)
}

// commitTime reads a commit's time from a push or pull request event's payload: GitHub's
// head_commit, the commit of GitLab's and GitHub's commits lists, Bitbucket's pushed target.
func commitTime(payload any, sha string) time.Time {
	p, _ := payload.(map[string]any)
	var texts []any
	if hc, ok := p["head_commit"].(map[string]any); ok && (sha == "" || hc["id"] == sha) {
		texts = append(texts, hc["timestamp"])
	}
	if commits, ok := p["commits"].([]any); ok {
		for _, c := range commits {
			if c, ok := c.(map[string]any); ok && (c["id"] == sha || sha == "" && len(commits) == 1) {
				texts = append(texts, c["timestamp"])
			}
		}
	}
	if push, ok := p["push"].(map[string]any); ok {
		if changes, ok := push["changes"].([]any); ok && len(changes) > 0 {
			ch, _ := changes[0].(map[string]any)
			nw, _ := ch["new"].(map[string]any)
			tgt, _ := nw["target"].(map[string]any)
			if sha == "" || tgt["hash"] == sha {
				texts = append(texts, tgt["date"])
			}
		}
	}
	for _, t := range texts {
		if s, ok := t.(string); ok {
			if at, err := time.Parse(time.RFC3339, s); err == nil {
				return at.UTC()
			}
		}
	}
	return time.Time{}
}
