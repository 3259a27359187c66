package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/triggers"
	"github.com/gantry-cd/gantry/triggers/directory"
	"github.com/gantry-cd/gantry/workflows"
)

// providers maps the webhook path segment to the trigger's provider name.
var providers = map[string]string{"github": "Github", "gitlab": "Gitlab", "bitbucket": "Bitbucket"}

// Result is one trigger's outcome for a delivery.
type Result struct {
	Trigger     string `json:"trigger"`
	Status      string `json:"status"`
	Reason      string `json:"reason,omitempty"`
	ExecutionID string `json:"executionId,omitempty"`
	Duplicate   bool   `json:"duplicate,omitempty"`
	// Notifications keys the records of the TriggerFailed notifications of a failed start
	// (GET /api/v1/executions/{key}/notifications).
	Notifications string `json:"notifications,omitempty"`
}

// readBody reads a webhook body within MaxBody.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(w, http.StatusRequestEntityTooLarge, "too-large", "request body is larger than %d bytes", MaxBody)
		return nil, false
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "bad-request", "read body: %v", err)
		return nil, false
	}
	return b, true
}

// gitWebhook receives GitHub, GitLab and Bitbucket deliveries. Each trigger of that provider
// authenticates the delivery with its own secret first; unsigned deliveries are 401, badly
// signed ones 403, and neither starts anything.
func (s *Server) gitWebhook(w http.ResponseWriter, r *http.Request) {
	provider, ok := providers[r.PathValue("provider")]
	if !ok {
		fail(w, http.StatusNotFound, "not-found", "unknown webhook provider %q (github, gitlab, bitbucket)", r.PathValue("provider"))
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	ev, err := triggers.Parse(provider, r.Header, body)
	if err != nil {
		s.record(triggers.Record{Provider: provider, Status: triggers.StatusInvalidPayload, Reason: err.Error()})
		fail(w, http.StatusBadRequest, "invalid-payload", "%v", err)
		return
	}
	reg := s.registry()
	var results []Result
	unsigned, badly := 0, 0
	candidates := 0
	for _, lt := range reg.Triggers {
		t := lt.Trigger
		if !listensTo(t, provider) {
			continue
		}
		candidates++
		secret, err := s.webhookSecret(r.Context(), t)
		if err == nil {
			err = triggers.Verify(provider, r.Header, body, secret)
		}
		if err != nil {
			if errors.Is(err, triggers.ErrUnsigned) {
				unsigned++
			} else {
				badly++
			}
			// The reason never carries the secret or the signature.
			s.record(triggers.Record{Provider: provider, DeliveryID: ev.DeliveryID, Trigger: t.Identifier, Status: triggers.StatusAuthFailed, Reason: authReason(err)})
			continue
		}
		results = append(results, s.fire(r.Context(), reg, t, ev, provider, ev.Sender, "WEBHOOK", nil))
	}
	switch {
	case candidates == 0:
		s.record(triggers.Record{Provider: provider, DeliveryID: ev.DeliveryID, Status: triggers.StatusNoRepo, Reason: "no " + provider + " trigger"})
		writeJSON(w, http.StatusAccepted, map[string]any{"status": triggers.StatusNoRepo, "results": []Result{}})
	case len(results) == 0 && unsigned > 0 && badly == 0:
		w.Header().Set("WWW-Authenticate", `HMAC realm="gantry-webhook"`)
		fail(w, http.StatusUnauthorized, "unsigned", "the delivery carries no signature; configure the webhook secret on the provider")
	case len(results) == 0:
		fail(w, http.StatusForbidden, "bad-signature", "the delivery's signature does not match any trigger's secret")
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"results": results})
	}
}

func authReason(err error) string {
	if errors.Is(err, triggers.ErrUnsigned) {
		return "unsigned delivery"
	}
	if errors.Is(err, triggers.ErrSignature) {
		return "signature does not match the trigger's secret"
	}
	return err.Error()
}

// customWebhook receives a custom trigger's delivery; it needs an API token as X-Api-Key and
// takes an Idempotency-Key header.
func (s *Server) customWebhook(w http.ResponseWriter, r *http.Request) {
	dir, err := s.gate.Directory()
	if err != nil {
		fail(w, http.StatusInternalServerError, "identity", "the server's identity file cannot be read")
		return
	}
	u, err := dir.Authenticate(r.Header.Get("X-Api-Key"))
	if err != nil {
		s.record(triggers.Record{Provider: "Custom", Trigger: r.PathValue("trigger"), Status: triggers.StatusAuthFailed, Reason: "missing or unknown X-Api-Key"})
		fail(w, http.StatusUnauthorized, "unauthenticated", "send an API token as X-Api-Key")
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	ev, err := triggers.Parse("Custom", r.Header, body)
	if err != nil {
		s.record(triggers.Record{Provider: "Custom", Trigger: r.PathValue("trigger"), Status: triggers.StatusInvalidPayload, Reason: err.Error()})
		fail(w, http.StatusBadRequest, "invalid-payload", "%v", err)
		return
	}
	reg := s.registry()
	for _, lt := range reg.Triggers {
		if lt.Trigger.Identifier == r.PathValue("trigger") && listensTo(lt.Trigger, "Custom") {
			res := s.fire(r.Context(), reg, lt.Trigger, ev, "Custom", u.Name, "WEBHOOK_CUSTOM", u)
			writeJSON(w, http.StatusAccepted, map[string]any{"results": []Result{res}})
			return
		}
	}
	s.record(triggers.Record{Provider: "Custom", Trigger: r.PathValue("trigger"), Status: triggers.StatusNoCustom})
	fail(w, http.StatusNotFound, "not-found", "no enabled custom trigger %q", r.PathValue("trigger"))
}

// fire evaluates one trigger and, when it matches, starts its pipeline at most once per
// delivery (the delivery ID is the idempotency key, kept in Temporal, not in memory). With
// roles, the start is authorized for the trigger's service identity and for the caller of a
// custom webhook (nil for Git webhooks, which the trigger's secret authenticates).
func (s *Server) fire(ctx context.Context, reg *directory.Registry, t *pipeline.Trigger, ev *triggers.Event, provider, user, kind string, caller *identity.User) Result {
	rec := triggers.Record{Provider: provider, DeliveryID: ev.DeliveryID, Trigger: t.Identifier}
	v := triggers.Evaluate(t, ev)
	if !v.Match {
		rec.Status, rec.Reason = v.Status, v.Reason
		s.record(rec)
		return Result{Trigger: t.Identifier, Status: v.Status, Reason: v.Reason}
	}
	res, err := reg.LoadFor(t, ev.Data())
	if res != nil {
		logDecision(s.o.Log, t.PipelineIdentifier, res.Policy)
	}
	if err != nil || !res.OK() || res.Plan == nil {
		reason := "the pipeline or its trigger inputs are invalid"
		if err != nil {
			reason = err.Error()
		} else if errs := res.Diags.Errors(); len(errs) > 0 {
			reason = errs[0].String()
		}
		rec.Status, rec.Reason = triggers.StatusInvalidInputYaml, reason
		rec.Notifications = s.triggerFailed(ctx, res, t, ev, kind, reason)
		s.record(rec)
		return Result{Trigger: t.Identifier, Status: rec.Status, Reason: reason, Notifications: rec.Notifications}
	}
	actor, err := s.authorizeTrigger(ctx, t, res.Plan, caller)
	if err != nil {
		rec.Status, rec.Reason = triggers.StatusForbidden, err.Error()
		s.record(rec)
		return Result{Trigger: t.Identifier, Status: rec.Status, Reason: rec.Reason}
	}
	key := ""
	if ev.DeliveryID != "" {
		key = "delivery/" + provider + "/" + t.Identifier + "/" + ev.DeliveryID
	}
	trig := workflows.Trigger{Type: kind, User: user, Data: ev.Data()}
	exec, started, err := s.o.Starter.StartOnce(ctx, key, res.Plan, trig, s.o.Settings)
	if err != nil {
		rec.Status, rec.Reason = triggers.StatusException, err.Error()
		rec.Notifications = s.triggerFailed(ctx, res, t, ev, kind, "could not start the pipeline: "+err.Error())
		s.record(rec)
		s.o.Log.Error("trigger could not start its pipeline", zap.String("trigger", t.Identifier), zap.Error(err))
		return Result{Trigger: t.Identifier, Status: rec.Status, Reason: "could not start the pipeline", Notifications: rec.Notifications}
	}
	rec.Status, rec.ExecutionID, rec.Duplicate = triggers.StatusRequested, exec.ID, !started
	s.record(rec)
	if started {
		s.gate.Audit(ctx, workflows.AuditRecord{User: actor, Action: "start", Execution: exec.ID, Pipeline: res.Plan.Identifier, Outcome: "ok", Detail: kind + " trigger " + t.Identifier})
	}
	return Result{Trigger: t.Identifier, Status: rec.Status, ExecutionID: exec.ID, Duplicate: !started}
}

// authorizeTrigger authorizes a trigger's start of p when the identity file defines roles: as
// the service identity whose triggers patterns match the trigger, and as the custom webhook's
// caller. It returns who the audit trail names; a refusal is audited and kept.
func (s *Server) authorizeTrigger(ctx context.Context, t *pipeline.Trigger, p *plan.Plan, caller *identity.User) (string, error) {
	actor := "trigger " + t.Identifier
	dir, err := s.gate.Directory()
	if err != nil {
		return actor, fmt.Errorf("the server's identity file cannot be read: %w", err)
	}
	if !dir.Enforcing() {
		return actor, nil
	}
	id := dir.TriggerIdentity(t.Identifier)
	if id == nil {
		err = fmt.Errorf("trigger %s acts as no service identity: the identity file defines roles, so give a user triggers: [%s] and a group whose roles allow execute on %s", t.Identifier, t.Identifier, p.Identifier)
	} else {
		actor = id.Name
		err = access.Plan(dir, id, p, false)
	}
	if err == nil && caller != nil {
		actor = caller.Name
		err = access.Plan(dir, caller, p, false)
	}
	if err != nil {
		s.gate.Audit(ctx, workflows.AuditRecord{User: actor, Action: "start", Pipeline: p.Identifier, Outcome: "refused", Detail: "trigger " + t.Identifier + ": " + err.Error()})
	}
	return actor, err
}

// triggerFailed tells the pipeline's TriggerFailed rules that a trigger could not start it;
// it returns the key of the notifications' records, or "".
func (s *Server) triggerFailed(ctx context.Context, res *load.Result, t *pipeline.Trigger, ev *triggers.Event, kind, reason string) string {
	if res == nil || res.Merged == nil {
		return "" // the pipeline itself does not load: it has no rules to read
	}
	p := res.Merged
	rules := pipeline.PlanNotifications(p.NotificationRules)
	var vars []plan.Variable
	for _, v := range p.Variables {
		vars = append(vars, plan.Variable{Name: v.Name, Type: v.Type, Value: v.Value})
	}
	id, err := s.o.Starter.NotifyTriggerFailed(ctx, rules, starter.FailedTrigger{Pipeline: p.Identifier, PipelineName: p.Name, Variables: vars,
		Trigger: t.Identifier, TriggerName: t.Name, Type: kind, Delivery: ev.DeliveryID, Reason: reason})
	if err != nil {
		s.o.Log.Error("TriggerFailed notifications not sent", zap.String("trigger", t.Identifier), zap.Error(err))
	}
	return id
}

func listensTo(t *pipeline.Trigger, provider string) bool {
	if t.Source == nil || t.Source.Type != "Webhook" || t.Source.Spec == nil {
		return false
	}
	ty := pipeline.Field(t.Source.Spec, "type")
	return ty != nil && ty.Value == provider && !strings.EqualFold(t.Enabled, "false")
}

// webhookSecret resolves a trigger's secret; a Git trigger without one cannot be invoked.
func (s *Server) webhookSecret(ctx context.Context, t *pipeline.Trigger) (string, error) {
	if t.EncryptedWebhookSecretIdentifier == "" {
		return "", fmt.Errorf("trigger %s has no encryptedWebhookSecretIdentifier; unsigned Git webhooks are refused", t.Identifier)
	}
	if s.o.Secrets == nil {
		return "", fmt.Errorf("no secret resolver")
	}
	return s.o.Secrets.Resolve(ctx, t.EncryptedWebhookSecretIdentifier)
}

func (s *Server) record(r triggers.Record) {
	if s.o.Events == nil {
		return
	}
	r.Time = time.Now().UTC()
	if err := s.o.Events.Add(r); err != nil {
		s.o.Log.Warn("trigger event not recorded", zap.Error(err))
	}
}

// registry returns the triggers directory, reloading it when its files changed.
func (s *Server) registry() *directory.Registry {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.o.PipelinesDir == "" {
		return &directory.Registry{}
	}
	fp := directory.Fingerprint(s.o.PipelinesDir)
	if s.reg == nil || fp != s.regFP {
		reg, diags := directory.LoadDir(s.o.PipelinesDir, s.o.Strict, s.o.TemplateDirs...)
		for _, d := range diags {
			s.o.Log.Warn("pipelines directory: file left out", zap.String("diagnostic", d.String()))
		}
		reg.BuildInfra = s.o.BuildInfra
		reg.Policies = func() (*policies.Engine, []plan.Source, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			return s.governance(ctx)
		}
		if s.reader() != nil {
			reg.Remote = s.triggeredRemote
		}
		s.reg, s.regFP = reg, fp
	}
	return s.reg
}

// SyncSchedules makes the Temporal Schedules match the cron triggers of the pipelines
// directory; `gantry server` calls it at start and whenever the directory's files change.
func (s *Server) SyncSchedules(ctx context.Context) error {
	reg := s.registry()
	var want []starter.CronSchedule
	for _, lt := range reg.Triggers {
		t := lt.Trigger
		if t.Source == nil || t.Source.Type != "Scheduled" || strings.EqualFold(t.Enabled, "false") {
			continue
		}
		spec := pipeline.Field(pipeline.Field(t.Source.Spec, "spec"), "expression")
		tz := pipeline.Field(pipeline.Field(t.Source.Spec, "spec"), "timezone")
		if tz == nil {
			tz = pipeline.Field(pipeline.Field(t.Source.Spec, "spec"), "timeZone")
		}
		res, err := reg.Load(t)
		if err != nil || res.Plan == nil {
			s.o.Log.Warn("cron trigger left out: its pipeline does not load", zap.String("trigger", t.Identifier), zap.Error(err))
			continue
		}
		actor, err := s.authorizeTrigger(ctx, t, res.Plan, nil)
		if err != nil {
			s.o.Log.Warn("cron trigger left out: its identity may not start its pipeline", zap.String("trigger", t.Identifier), zap.Error(err))
			continue
		}
		c := starter.CronSchedule{Trigger: t.Identifier, Expression: spec.Value, Input: workflows.CronInput{Trigger: t.Identifier, Plan: res.Plan, User: actor, Settings: s.o.Settings,
			FromGit: !reg.Local(t.PipelineIdentifier)}}
		if tz != nil {
			c.TimeZone = tz.Value
		}
		want = append(want, c)
	}
	if err := s.o.Starter.SyncSchedules(ctx, want); err != nil {
		return err
	}
	return s.o.Starter.SyncFreezeNotices(ctx, s.freezeNotices())
}

// LoadCron reads a cron trigger's remote pipeline as it is at the fire: at its branch's head,
// decided by the policies as they are now, and authorized for the trigger's identity
// (workflows.LoadCronActivity). What does not load fails the fire, naming why.
func (s *Server) LoadCron(ctx context.Context, req workflows.LoadCronRequest) (workflows.CronLoaded, error) {
	reg := s.registry()
	var t *pipeline.Trigger
	for _, lt := range reg.Triggers {
		if lt.Trigger.Identifier == req.Trigger {
			t = lt.Trigger
		}
	}
	if t == nil {
		return workflows.CronLoaded{}, temporal.NewNonRetryableApplicationError("cron trigger "+req.Trigger+" is no longer in "+s.o.PipelinesDir, "TriggerGone", nil)
	}
	res, err := reg.Load(t)
	if err == nil && (!res.OK() || res.Plan == nil) {
		reason := "its pipeline does not load"
		if errs := res.Diags.Errors(); len(errs) > 0 {
			reason = errs[0].String()
		} else if res.Policy != nil && res.Policy.Denied() {
			reason = "policies deny it: " + strings.Join(res.Policy.Messages(), "; ")
		}
		err = temporal.NewNonRetryableApplicationError("cron trigger "+t.Identifier+": "+reason, "InvalidPipeline", nil)
	}
	var re *remote.Error
	if errors.As(err, &re) && re.Status < 500 {
		err = temporal.NewNonRetryableApplicationError("cron trigger "+t.Identifier+": "+re.Msg, re.Code, nil)
	}
	if err != nil {
		s.o.Log.Error("cron fire not started: its pipeline was not read from Git", zap.String("trigger", req.Trigger), zap.Error(err))
		return workflows.CronLoaded{}, err
	}
	logDecision(s.o.Log, t.PipelineIdentifier, res.Policy)
	actor, err := s.authorizeTrigger(ctx, t, res.Plan, nil)
	if err != nil {
		return workflows.CronLoaded{}, temporal.NewNonRetryableApplicationError("cron trigger "+t.Identifier+": "+err.Error(), "Forbidden", nil)
	}
	return workflows.CronLoaded{Plan: res.Plan, User: actor}, nil
}

// freezeNotices are the freezes of the pipelines directory whose rules select the freezes'
// own events (a window beginning, the freeze switched on), enabled ones only.
func (s *Server) freezeNotices() []workflows.FreezeNoticesInput {
	if s.o.PipelinesDir == "" {
		return nil
	}
	cat, diags := entities.Load([]string{s.o.PipelinesDir}, func(f *pipeline.File) diag.List { _, d := validate.File(f); return d })
	for _, d := range diags.Errors() {
		s.o.Log.Warn("pipelines directory: freeze left out", zap.String("diagnostic", d.String()))
	}
	var out []workflows.FreezeNoticesInput
	for _, id := range slices.Sorted(maps.Keys(cat.Freezes)) {
		f := cat.Freezes[id].Freeze
		if f == nil || f.Status == "Disabled" {
			continue
		}
		rules := f.PlanRules(contract.EventFreezeWindowEnabled, contract.EventOnEnableFreezeWindow)
		if len(rules) == 0 {
			continue
		}
		pf := entities.PlanFreeze(f)
		pf.Rules = nil
		out = append(out, workflows.FreezeNoticesInput{Freeze: pf, Rules: rules})
	}
	return out
}

// Fingerprint is the current state of the pipelines directory and the identity file (whose
// roles decide which cron triggers may start their pipelines), to notice changes.
func (s *Server) Fingerprint() string {
	if s.o.PipelinesDir == "" {
		return ""
	}
	fp := directory.Fingerprint(s.o.PipelinesDir)
	if b, err := os.ReadFile(s.o.IdentityFile); err == nil {
		fp += "/" + identity.Hash(string(b))
	}
	return fp
}

// AccessWarnings are what `gantry server` says at start about who may do what: that every
// token may do everything while the identity file defines no roles, or which triggers act as
// no service identity and so start nothing.
func (s *Server) AccessWarnings() []string {
	dir, err := s.gate.Directory()
	if err != nil {
		return []string{"the identity file cannot be read: " + err.Error()}
	}
	if !dir.Enforcing() {
		return []string{"the identity file defines no roles: every token may start any pipeline, run inline YAML (arbitrary code on the workers), abort, intervene and read every execution; define roles (docs/api.md, Who may do what)"}
	}
	var out []string
	for _, lt := range s.registry().Triggers {
		if dir.TriggerIdentity(lt.Trigger.Identifier) == nil {
			out = append(out, fmt.Sprintf("trigger %s acts as no service identity, so it starts nothing while roles are defined: give a user triggers: [%s] in the identity file", lt.Trigger.Identifier, lt.Trigger.Identifier))
		}
	}
	return out
}
