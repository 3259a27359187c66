package gantry.deployment_has_rollback_test

import data.gantry.deployment_has_rollback
import rego.v1

test_missing_rollback_denied if {
	count(deployment_has_rollback.deny) == 1 with input as {"pipeline": {"stages": [{"parallel": [
		{"stage": {"identifier": "d", "type": "Deployment", "spec": {"execution": {"steps": []}}}},
	]}]}}
}

test_rollback_present_allowed if {
	count(deployment_has_rollback.deny) == 0 with input as {"pipeline": {"stages": [{"stage": {
		"identifier": "d", "type": "Deployment",
		"spec": {"execution": {"steps": [], "rollbackSteps": [{"step": {"type": "K8sRollingRollback"}}]}},
	}}]}}
}

test_custom_stage_ignored if {
	count(deployment_has_rollback.deny) == 0 with input as {"pipeline": {"stages": [{"stage": {"identifier": "c", "type": "Custom"}}]}}
}
