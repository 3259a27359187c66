package gantry.required_tags_test

import data.gantry.required_tags
import rego.v1

test_missing_both if count(required_tags.deny) == 2 with input as {"pipeline": {}}

test_present if count(required_tags.deny) == 0 with input as {"pipeline": {"tags": {"owner": "ana", "team": "payments"}}}
