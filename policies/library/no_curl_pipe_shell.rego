# Piping a download straight into a shell runs whatever the network returns.
package gantry.no_curl_pipe_shell

import data.gantrylib
import rego.v1

deny contains msg if {
	some step in gantrylib.steps
	step.type == "ShellScript"
	script := step.spec.source.spec.script
	contains(script, "|") # cheap, and the pattern needs one
	regex.match(`(curl|wget)[^|\n]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`, script)
	msg := sprintf("step %s pipes a download into a shell; download, verify a checksum, then run it", [step.identifier])
}
