# Production deployments need a human approval first: a HarnessApproval step in the stage or
# an Approval stage earlier in the pipeline.
package gantry.approval_before_prod

import data.gantrylib
import rego.v1

deny contains msg if {
	some i
	stage := input.pipeline.stages[i].stage
	gantrylib.production(stage)
	not approval_step(stage)
	not approval_stage_before(i)
	msg := sprintf("stage %s deploys to production without an approval before it", [stage.identifier])
}

approval_step(stage) if {
	some step in gantry.find_all(stage, {"step"}).step
	step.type == "HarnessApproval"
}

approval_stage_before(i) if {
	some j
	input.pipeline.stages[j].stage.type == "Approval"
	j < i
}
