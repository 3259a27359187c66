package gantry.approval_before_prod_test

import data.gantry.approval_before_prod
import rego.v1

prod := {"identifier": "deploy", "type": "Deployment", "spec": {"environment": {"environmentRef": "prod"}, "execution": {"steps": []}}}

test_prod_without_approval_denied if {
	count(approval_before_prod.deny) == 1 with input as {"pipeline": {"stages": [{"stage": prod}]}}
}

test_approval_stage_first_allowed if {
	count(approval_before_prod.deny) == 0 with input as {"pipeline": {"stages": [
		{"stage": {"identifier": "gate", "type": "Approval"}},
		{"stage": prod},
	]}}
}

test_approval_step_inside_allowed if {
	stage := object.union(prod, {"spec": {"environment": {"environmentRef": "prod"}, "execution": {"steps": [{"step": {"type": "HarnessApproval"}}]}}})
	count(approval_before_prod.deny) == 0 with input as {"pipeline": {"stages": [{"stage": stage}]}}
}

test_staging_ignored if {
	stage := {"identifier": "s", "type": "Deployment", "spec": {"environment": {"environmentRef": "staging"}}}
	count(approval_before_prod.deny) == 0 with input as {"pipeline": {"stages": [{"stage": stage}]}}
}
