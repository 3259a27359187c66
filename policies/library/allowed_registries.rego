# Container images come only from the registries the platform team trusts. Edit `allowed`.
package gantry.allowed_registries

import data.gantrylib
import rego.v1

allowed := ["registry.example.com/", "ghcr.io/acme/"]

deny contains msg if {
	some step in gantrylib.steps
	step.type == "Container"
	image := object.get(step, ["spec", "image"], "")
	not startswith(image, "<+")
	not trusted(image)
	msg := sprintf("step %s uses image %s from a registry outside %v", [step.identifier, image, allowed])
}

trusted(image) if {
	some prefix in allowed
	startswith(image, prefix)
}
