package workflows

import (
	"reflect"
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/plan"
)

// TestLegacyTraitsAreTheCatalogs checks that recorded plans without traits run as compiled
// plans do today: each legacy entry is its type's catalog traits. A deliberate change of a
// catalog trait changes this test, never the legacy table (old histories keep their rules).
func TestLegacyTraitsAreTheCatalogs(t *testing.T) {
	for typ, legacy := range legacyTraits {
		now := steps.TraitsOf(typ)
		if now == nil {
			t.Errorf("%s is no longer in the catalog", typ)
			continue
		}
		if !reflect.DeepEqual(*now, legacy) {
			t.Errorf("%s: legacy traits %+v, catalog %+v", typ, legacy, *now)
		}
	}
}

// TestBackfillTraits checks that a plan recorded before nodes carried traits gets its types'
// traits everywhere below a stage, and that recorded traits are kept.
func TestBackfillTraits(t *testing.T) {
	own := &plan.Traits{Activity: "recorded"}
	stage := &plan.Node{Kind: plan.KindStage, ID: "s", Children: []*plan.Node{
		{Kind: plan.KindStep, ID: "a", Type: "ShellScript"},
		{Kind: plan.KindGroup, ID: "g", Children: []*plan.Node{{Kind: plan.KindStep, ID: "b", Type: "K8sApply"}}},
		{Kind: plan.KindStep, ID: "c", Type: "Wait", Traits: own},
		{Kind: plan.KindStep, ID: "d", Type: "NotAStepTypeThen"},
	}, Rollback: []*plan.Node{{Kind: plan.KindStep, ID: "r", Type: "K8sRollingRollback"}}}
	backfillTraits([]*plan.Node{stage, nil})
	if stage.Traits != nil {
		t.Error("a stage got step traits")
	}
	if tr := stage.Children[0].Traits; tr == nil || tr.Activity != contract.ShellScript || !tr.FastPath {
		t.Errorf("ShellScript traits: %+v", tr)
	}
	if tr := stage.Children[1].Children[0].Traits; tr == nil || tr.Activity != contract.Kubernetes || !tr.Deployment {
		t.Errorf("K8sApply traits in a group: %+v", tr)
	}
	if stage.Children[2].Traits != own {
		t.Error("recorded traits were replaced")
	}
	if stage.Children[3].Traits != nil {
		t.Error("an unknown type got traits")
	}
	if tr := stage.Rollback[0].Traits; tr == nil || tr.Activity != contract.Kubernetes {
		t.Errorf("rollback step traits: %+v", tr)
	}
}
