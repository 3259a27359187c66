# Helpers shared by the starter policies (not a policy: its package is outside gantry.*).
package gantrylib

import rego.v1

# Every stage object in the pipeline, parallel members included.
stages contains s if {
	walk(input.pipeline, [_, v])
	s := v.stage
}

# Every step object in the pipeline, in groups and rollback sections too.
steps contains s if {
	walk(input.pipeline, [_, v])
	s := v.step
}

# A stage deploys to production when its environment says so or it is tagged env: production.
production(stage) if contains(lower(object.get(stage, ["spec", "environment", "environmentRef"], "")), "prod")

production(stage) if lower(object.get(stage, ["tags", "env"], "")) == "production"

# Seconds in a Harness duration such as 1d, 2h30m or 45m.
seconds(d) := sum([n |
	some m in regex.find_all_string_submatch_n(`(\d+)([wdhms])`, d, -1)
	n := to_number(m[1]) * {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}[m[2]]
])
