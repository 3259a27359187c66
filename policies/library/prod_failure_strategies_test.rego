package gantry.prod_failure_strategies_test

import data.gantry.prod_failure_strategies
import rego.v1

test_prod_without_strategies_denied if {
	count(prod_failure_strategies.deny) == 1 with input as {"pipeline": {"stages": [{"stage": {"identifier": "p", "tags": {"env": "production"}}}]}}
}

test_prod_with_strategies_allowed if {
	count(prod_failure_strategies.deny) == 0 with input as {"pipeline": {"stages": [{"stage": {
		"identifier": "p", "tags": {"env": "production"},
		"failureStrategies": [{"onFailure": {"errors": ["AllErrors"], "action": {"type": "StageRollback"}}}],
	}}]}}
}
