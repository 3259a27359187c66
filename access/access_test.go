package access

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/plan"
)

func TestPlanChecksEveryDeploymentAndCreate(t *testing.T) {
	env := func(id, ty string) *plan.Deployment {
		return &plan.Deployment{Type: "Kubernetes", Environment: &plan.Environment{ID: id, Type: ty}}
	}
	p := &plan.Plan{Identifier: "web_deploy", Stages: []*plan.Node{
		{Kind: plan.KindStage, ID: "build"},
		{Kind: plan.KindParallel, Children: []*plan.Node{
			{Kind: plan.KindStage, ID: "dev", Deploy: env("dev", "PreProduction")},
			{Kind: plan.KindStage, ID: "many", Deploys: map[string]*plan.Deployment{"b": env("prod", "Production"), "a": env("qa", "PreProduction")}},
		}},
	}}
	got := []string{}
	for _, d := range Deployments(p) {
		got = append(got, d.Stage+":"+d.Environment.ID)
	}
	if strings.Join(got, " ") != "dev:dev many:qa many:prod" {
		t.Fatalf("deployments %v", got)
	}
	dir := &identity.Directory{
		Users:  []identity.User{{Name: "dev", Groups: []string{"devs"}}, {Name: "lead", Groups: []string{"leads"}}},
		Groups: []identity.Group{{Name: "devs", Roles: []string{"pre"}}, {Name: "leads", Roles: []string{"all"}}},
		Roles: []identity.Role{
			{Name: "pre", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Execute}, Environments: []string{"PreProduction"}}}},
			{Name: "all", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Execute, identity.Create}}}},
		},
	}
	if err := Plan(dir, &dir.Users[0], p, false); err == nil || !strings.Contains(err.Error(), "environment prod (Production) from stage many") {
		t.Errorf("dev into prod: %v", err)
	}
	if err := Plan(dir, &dir.Users[1], p, false); err != nil {
		t.Errorf("lead: %v", err)
	}
	if err := Plan(dir, &dir.Users[1], p, true); err != nil {
		t.Errorf("lead, inline: %v", err)
	}
	dir.Roles[0].Permissions[0].Environments = nil
	if err := Plan(dir, &dir.Users[0], p, true); err == nil || !strings.Contains(err.Error(), "dev may not create pipeline web_deploy") {
		t.Errorf("dev, inline: %v", err)
	}
	if !Forbidden(Plan(dir, &dir.Users[0], p, true)) {
		t.Error("a role refusal is not Forbidden")
	}
}

// A chained pipeline runs as the user who started its parent: running the parent needs the
// rights to run the child, its deployments included.
func TestPlanChecksChainedPipelines(t *testing.T) {
	child := &plan.Plan{Identifier: "team_deploy", Stages: []*plan.Node{
		{Kind: plan.KindStage, ID: "prod", Deploy: &plan.Deployment{Type: "Kubernetes", Environment: &plan.Environment{ID: "prod", Type: "Production"}}},
	}}
	p := &plan.Plan{Identifier: "release", Stages: []*plan.Node{
		{Kind: plan.KindStage, ID: "team", Type: "Pipeline", Children: []*plan.Node{
			{Kind: plan.KindStep, ID: "team_deploy", Chain: &plan.Chain{Pipeline: "team_deploy", Plan: child}},
		}},
	}}
	dir := &identity.Directory{
		Users:  []identity.User{{Name: "dev", Groups: []string{"devs"}}, {Name: "lead", Groups: []string{"leads"}}},
		Groups: []identity.Group{{Name: "devs", Roles: []string{"release_only"}}, {Name: "leads", Roles: []string{"all"}}},
		Roles: []identity.Role{
			{Name: "release_only", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Execute}, Pipelines: []string{"release"}}}},
			{Name: "all", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Execute}}}},
		},
	}
	if err := Plan(dir, &dir.Users[0], p, false); err == nil || !strings.Contains(err.Error(), "team_deploy") {
		t.Errorf("dev runs release, which chains team_deploy: %v", err)
	}
	if err := Plan(dir, &dir.Users[1], p, false); err != nil {
		t.Errorf("lead: %v", err)
	}
}
