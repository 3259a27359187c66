# Production stages must say what happens on failure instead of relying on defaults.
package gantry.prod_failure_strategies

import data.gantrylib
import rego.v1

deny contains msg if {
	some stage in gantrylib.stages
	gantrylib.production(stage)
	count(object.get(stage, "failureStrategies", [])) == 0
	msg := sprintf("production stage %s defines no failureStrategies", [stage.identifier])
}
