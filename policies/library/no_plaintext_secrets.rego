# Secrets belong in the secret store (type Secret or <+secrets.getValue(...)>), not in YAML.
package gantry.no_plaintext_secrets

import data.gantrylib
import rego.v1

deny contains msg if {
	some variables in gantrylib.variable_lists
	some variable in variables
	variable.type == "String"
	regex.match(`(?i)(password|passwd|secret|token|api_?key|private_?key)`, variable.name)
	value := object.get(variable, "value", "")
	value != ""
	not startswith(value, "<+")
	msg := sprintf("variable %s holds a plain-text secret; make it type Secret or use <+secrets.getValue(...)>", [variable.name])
}
