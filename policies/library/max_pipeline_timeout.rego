# Every pipeline has a timeout of at most one day, so nothing waits forever.
package gantry.max_pipeline_timeout

import data.gantrylib
import rego.v1

max_seconds := 86400

deny contains "the pipeline sets no timeout; set one of at most 1d" if not input.pipeline.timeout

deny contains msg if {
	t := input.pipeline.timeout
	not startswith(t, "<+")
	gantrylib.seconds(t) > max_seconds
	msg := sprintf("pipeline timeout %s is longer than 1d", [t])
}
