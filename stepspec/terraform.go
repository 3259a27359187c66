package stepspec

// The Terraform step types, run by the Terraform family (one handler each) with OpenTofu or
// Terraform on the worker.
const (
	TerraformPlan     = "TerraformPlan"
	TerraformApply    = "TerraformApply"
	TerraformDestroy  = "TerraformDestroy"
	TerraformRollback = "TerraformRollback"
)
