package gantry.allowed_registries_test

import data.gantry.allowed_registries
import rego.v1

container(image) := {"pipeline": {"stages": [{"stage": {"spec": {"execution": {"steps": [{"step": {
	"identifier": "c", "type": "Container", "spec": {"image": image},
}}]}}}}]}}

test_docker_hub_denied if count(allowed_registries.deny) == 1 with input as container("ubuntu:24.04")

test_trusted_allowed if count(allowed_registries.deny) == 0 with input as container("ghcr.io/acme/builder:1.2")

test_expression_left_alone if count(allowed_registries.deny) == 0 with input as container("<+pipeline.variables.image>")
