# Secrets belong in the secret store (type Secret or <+secrets.getValue(...)>), not in YAML.
package gantry.no_plaintext_secrets

import rego.v1

deny contains msg if {
	walk(input.pipeline, [_, v])
	some variable in v.variables
	variable.type == "String"
	regex.match(`(?i)(password|passwd|secret|token|api_?key|private_?key)`, variable.name)
	value := object.get(variable, "value", "")
	value != ""
	not startswith(value, "<+")
	msg := sprintf("variable %s holds a plain-text secret; make it type Secret or use <+secrets.getValue(...)>", [variable.name])
}
