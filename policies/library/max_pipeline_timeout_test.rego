package gantry.max_pipeline_timeout_test

import data.gantry.max_pipeline_timeout
import rego.v1

test_missing_denied if count(max_pipeline_timeout.deny) == 1 with input as {"pipeline": {}}

test_two_days_denied if count(max_pipeline_timeout.deny) == 1 with input as {"pipeline": {"timeout": "2d"}}

test_mixed_units if count(max_pipeline_timeout.deny) == 1 with input as {"pipeline": {"timeout": "23h 61m"}}

test_one_hour_allowed if count(max_pipeline_timeout.deny) == 0 with input as {"pipeline": {"timeout": "1h30m"}}
