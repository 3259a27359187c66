package pipeline

import "strings"

// ErrorCategories are the failure-strategy categories of spec 5.2, in the canonical dispatch
// order of spec 5.5 (AllErrors first: it stands for all of them).
var ErrorCategories = []string{
	"AllErrors", "Unknown", "Authentication", "Connectivity", "Timeout", "Authorization",
	"Verification", "DelegateProvisioning", "PolicyEvaluationFailure", "InputTimeoutError",
	"ApprovalRejection", "DelegateRestart", "UserMarkedFailure",
}

// ActionTypes are the failure-strategy actions of spec 5.3.
var ActionTypes = []string{
	"Ignore", "MarkAsSuccess", "MarkAsFailure", "Abort", "Retry", "RetryStepGroup",
	"ManualIntervention", "StageRollback", "StepGroupRollback", "PipelineRollback",
	"ProceedWithDefaultValues",
}

// Canonical returns the canonical spelling of s from list, matched case-insensitively
// (spec 5.1 Decision), or "" when s is not in the list.
func Canonical(list []string, s string) string {
	for _, c := range list {
		if strings.EqualFold(c, s) {
			return c
		}
	}
	return ""
}
