# Pipelines say who owns them.
package gantry.required_tags

import rego.v1

required := ["owner", "team"]

deny contains msg if {
	some tag in required
	not input.pipeline.tags[tag]
	msg := sprintf("the pipeline has no %s tag", [tag])
}
