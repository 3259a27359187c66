# Helpers shared by the starter policies (not a policy: its package is outside gantry.*).
package gantrylib

import rego.v1

# The stages, steps and variable lists of the pipeline, found in one pass: every stage object
# (parallel members included), every step object (in groups and rollback sections too) and
# every variables list (pipeline, stages, step groups, overrides), each in the order walk
# visits them (lists in order, an object's fields by name).
# gantry.find_all is a Gantry builtin: for one name it finds what
# [v[name] | walk(x, [_, v])] finds, at a fraction of the cost.
found := gantry.find_all(input.pipeline, {"stage", "step", "variables"})

stages := found.stage

steps := found.step

variable_lists := found.variables

# A stage deploys to production when its environment says so or it is tagged env: production.
production(stage) if contains(lower(stage.spec.environment.environmentRef), "prod")

production(stage) if lower(stage.tags.env) == "production"

# Seconds in a Harness duration such as 1d, 2h30m or 45m.
seconds(d) := sum([n |
	some m in regex.find_all_string_submatch_n(`(\d+)([wdhms])`, d, -1)
	n := to_number(m[1]) * {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}[m[2]]
])
