package gantrylib_test

import data.gantrylib
import rego.v1

nested := {"pipeline": {
	"variables": [{"name": "region", "type": "String", "value": "eu"}],
	"stages": [
		{"stage": {"identifier": "a", "spec": {"execution": {
			"steps": [
				{"step": {"identifier": "a1", "type": "ShellScript"}},
				{"parallel": [
					{"step": {"identifier": "a2", "type": "Http"}},
					{"stepGroup": {"identifier": "g", "variables": [{"name": "x", "type": "String", "value": "1"}], "steps": [
						{"step": {"identifier": "a3", "type": "ShellScript"}},
						{"stepGroup": {"identifier": "h", "steps": [{"step": {"identifier": "a4", "type": "Wait"}}]}},
					]}},
				]},
			],
			"rollbackSteps": [{"step": {"identifier": "r1", "type": "ShellScript"}}],
		}}}},
		{"parallel": [
			{"stage": {"identifier": "b", "spec": {"environment": {"provisioner": {"steps": [{"step": {"identifier": "p1", "type": "ShellScript"}}]}}}}},
			{"stage": {"identifier": "c", "variables": [{"name": "y", "type": "String", "value": "2"}]}},
		]},
	],
}}

# gantry.find_all finds exactly what a walk finds.
test_find_all_finds_what_walk_finds if {
	walked_steps := {s | walk(nested.pipeline, [_, v]); s := v.step}
	walked_stages := {s | walk(nested.pipeline, [_, v]); s := v.stage}
	walked_vars := {l | walk(nested.pipeline, [_, v]); l := v.variables}
	{s | some s in gantrylib.steps} == walked_steps with input as nested
	{s | some s in gantrylib.stages} == walked_stages with input as nested
	{l | some l in gantrylib.variable_lists} == walked_vars with input as nested
	count(walked_steps) == 6
	count(walked_vars) == 3
}

# They come in the order walk visits them: lists in order, an object's fields by name.
test_find_all_document_order if {
	[s.identifier | some s in gantrylib.stages] == ["a", "b", "c"] with input as nested
	[s.identifier | some s in gantrylib.steps] == ["r1", "a1", "a2", "a3", "a4", "p1"] with input as nested
}
