# A deployment without rollback steps has no way back when it fails.
package gantry.deployment_has_rollback

import data.gantrylib
import rego.v1

deny contains msg if {
	some stage in gantrylib.stages
	stage.type == "Deployment"
	count(object.get(stage, ["spec", "execution", "rollbackSteps"], [])) == 0
	msg := sprintf("Deployment stage %s has no rollbackSteps", [stage.identifier])
}
