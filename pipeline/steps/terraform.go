package steps

import (
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The Terraform steps' specs, shared with the Terraform family (stepspec); TerraformDestroy's
// spec is TerraformApply's, checked for its own configuration types.
type (
	TerraformPlan          = stepspec.TerraformPlanSpec
	TerraformPlanConfig    = stepspec.TerraformPlanConfig
	TerraformFiles         = stepspec.TerraformFiles
	TerraformConfigFiles   = stepspec.TerraformConfigFiles
	TerraformStore         = stepspec.TerraformStore
	TerraformStoreSpec     = stepspec.TerraformStoreSpec
	TerraformVarFileEntry  = stepspec.TerraformVarFileEntry
	TerraformVarFile       = stepspec.TerraformVarFile
	TerraformVarFileSpec   = stepspec.TerraformVarFileSpec
	TerraformBackendConfig = stepspec.TerraformBackendConfig
	TerraformFlag          = stepspec.TerraformFlag
	TerraformApply         = stepspec.TerraformApplySpec
	TerraformStepConfig    = stepspec.TerraformStepConfig
	TerraformRollback      = stepspec.TerraformRollbackSpec
)

// terraformCommands are the command types commandFlags may name.
var terraformCommands = []string{"INIT", "WORKSPACE", "REFRESH", "PLAN", "APPLY", "DESTROY"}

// The store types a configuration's or a var file's files may come from.
var terraformStores = []string{"Git", "Github", "GitLab", "Bitbucket", "Inline"}

// Check checks the command, the files and the flags; Terraform Cloud is not run.
func checkTerraformPlan(sp *TerraformPlan, c Checker) {
	terraformCloud(c, sp.Node, sp.CloudCliConfiguration)
	if sp.Configuration == nil {
		if sp.CloudCliConfiguration == nil {
			c.Error(sp.Node, "missing-field", "TerraformPlan needs `configuration`").
				SetHint("configuration: {command: Apply, configFiles: {store: ...}, secretManagerRef: ...}")
		}
		return
	}
	cf := sp.Configuration
	c.Enum(cf.Node, "command", cf.Command, []string{"Apply", "Destroy"}, "TerraformPlan command")
	booleans(c, cf.Node, "exportTerraformPlanJson", string(cf.ExportTerraformPlanJson), "exportTerraformHumanReadablePlan", cf.ExportTerraformHumanReadablePlan,
		"skipRefreshCommand", string(cf.SkipRefreshCommand), "skipStateStorage", cf.SkipStateStorage, "storeTfPlanOnDelegate", cf.StoreTfPlanOnDelegate,
		"createRemoteWorkspaceWithPrefix", cf.CreateRemoteWorkspaceWithPrefix)
	ignoredTrue(c, cf.Node, "exportTerraformHumanReadablePlan", cf.ExportTerraformHumanReadablePlan, "the plan's human-readable form is in the step's log")
	ignoredTrue(c, cf.Node, "storeTfPlanOnDelegate", cf.StoreTfPlanOnDelegate, "Gantry keeps the plan sealed with its provisioner, whichever worker runs the apply")
	ignoredTrue(c, cf.Node, "skipStateStorage", cf.SkipStateStorage, "the state is the backend's; Gantry stores none of its own")
	ignoredTrue(c, cf.Node, "createRemoteWorkspaceWithPrefix", cf.CreateRemoteWorkspaceWithPrefix, "it applies to Terraform Cloud workspaces only")
	c.Ignored(pipeline.ValueAt(cf.Node, "secretManagerRef"), "secretManagerRef",
		"Gantry seals the saved plan with the worker's codec keys, not with a secret manager")
	checkTerraformFiles(c, &cf.TerraformFiles)
	terraformFlags(c, cf.CommandFlags)
}

// checkTerraformApply checks the configuration type and, for an inline one, its files.
func checkTerraformApply(sp *TerraformApply, c Checker) {
	checkApplyOrDestroy(c, sp, stepspec.TerraformApply, []string{"Inline", "InheritFromPlan"})
}

func checkApplyOrDestroy(c Checker, sp *TerraformApply, typ string, types []string) {
	terraformCloud(c, sp.Node, sp.CloudCliConfiguration)
	cf := sp.Configuration
	if cf == nil {
		if sp.CloudCliConfiguration == nil {
			c.Error(sp.Node, "missing-field", "%s needs `configuration`", typ).
				SetHint("configuration: {type: InheritFromPlan}")
		}
		return
	}
	c.Enum(cf.Node, "type", cf.Type, types, typ+" configuration type")
	booleans(c, cf.Node, "skipRefreshCommand", string(cf.SkipRefreshCommand), "skipStateStorage", cf.SkipStateStorage,
		"createRemoteWorkspaceWithPrefix", cf.CreateRemoteWorkspaceWithPrefix)
	ignoredTrue(c, cf.Node, "skipStateStorage", cf.SkipStateStorage, "the state is the backend's; Gantry stores none of its own")
	ignoredTrue(c, cf.Node, "createRemoteWorkspaceWithPrefix", cf.CreateRemoteWorkspaceWithPrefix, "it applies to Terraform Cloud workspaces only")
	terraformFlags(c, cf.CommandFlags)
	switch cf.Type {
	case "Inline":
		if cf.Spec == nil {
			c.Error(cf.Node, "missing-field", "an Inline configuration needs `spec` with its configFiles").
				SetHint("spec: {configFiles: {store: ...}}")
			return
		}
		checkTerraformFiles(c, cf.Spec)
	default:
		if cf.Spec != nil {
			c.Ignored(pipeline.ValueAt(cf.Node, "spec"), "spec", "an inherited configuration is the plan's or the apply's, not this spec")
		}
	}
}

// checkTerraformDestroy checks the configuration type and, for an inline one, its files.
func checkTerraformDestroy(sp *TerraformApply, c Checker) {
	checkApplyOrDestroy(c, sp, stepspec.TerraformDestroy, []string{"Inline", "InheritFromPlan", "InheritFromApply"})
}

// checkTerraformRollback checks the flags.
func checkTerraformRollback(sp *TerraformRollback, c Checker) {
	c.Boolean(sp.Node, "skipRefreshCommand", string(sp.SkipRefreshCommand))
	terraformFlags(c, sp.CommandFlags)
}

func checkTerraformFiles(c Checker, f *TerraformFiles) {
	if f.ConfigFiles != nil && f.ConfigFiles.Store != nil {
		terraformStore(c, f.ConfigFiles.Store, "configFiles", true)
		if f.ConfigFiles.ModuleSource != nil {
			c.Ignored(f.ConfigFiles.ModuleSource, "moduleSource",
				"modules are fetched by the binary as the configuration says; connector credentials are not lent to it")
		}
	}
	seen := map[string]bool{}
	for _, e := range f.VarFiles {
		v := e.VarFile
		if v == nil {
			continue
		}
		if seen[v.Identifier] {
			c.Error(pipeline.ValueAt(v.Node, "identifier"), "duplicate", "var file %s is listed twice", v.Identifier)
		}
		seen[v.Identifier] = true
		varSource(c, v.Node, v.Type, v.Spec, "var file "+v.Identifier)
	}
	if b := f.BackendConfig; b != nil {
		// An empty backendConfig leaves the configuration's own backend block as it is.
		if b.Type != "" || b.Spec != nil {
			varSource(c, b.Node, b.Type, b.Spec, "backendConfig")
		}
	}
	c.Variables(f.EnvironmentVariables, "environment variable", []string{"String", "Number", "Secret"})
	if t := f.Targets; t != nil && !scalarList(t) {
		c.Error(t, "type", "targets must be a list of resource addresses").SetHint("targets: [terraform_data.web]")
	}
	if f.ProviderCredential != nil {
		c.Unsupported(pipeline.ValueAt(f.Node, "providerCredential"), "unsupported-field",
			"providerCredential: Gantry does not lend cloud connector credentials to Terraform yet").
			SetHint("give the provider its credentials through environmentVariables (Secret values)")
	}
}

// varSource checks an Inline or Remote var file (or backend configuration).
func varSource(c Checker, node *yaml.Node, typ string, spec *TerraformVarFileSpec, what string) {
	c.Enum(node, "type", typ, []string{"Inline", "Remote"}, what+" type")
	if spec == nil {
		c.Error(node, "missing-field", "%s needs `spec`", what)
		return
	}
	c.Boolean(spec.Node, "optional", string(spec.Optional))
	switch typ {
	case "Inline":
		if pipeline.Field(spec.Node, "content") == nil {
			c.Error(spec.Node, "missing-field", "an Inline %s needs `content`", what)
		}
	case "Remote":
		if spec.Store == nil {
			c.Error(spec.Node, "missing-field", "a Remote %s needs `store`", what).
				SetHint("store: {type: Git, spec: {connectorRef: ..., gitFetchType: Branch, branch: main, paths: [vars.tfvars]}}")
			return
		}
		terraformStore(c, spec.Store, what, false)
	}
}

// terraformStore checks a Git or Inline store; config says it holds the root module (a folder).
func terraformStore(c Checker, st *TerraformStore, what string, config bool) {
	c.Enum(st.Node, "type", st.Type, terraformStores, what+" store type")
	if st.Spec == nil || !slices.Contains(terraformStores, st.Type) {
		return
	}
	s := st.Spec
	if st.Type == "Inline" {
		if pipeline.Field(s.Node, "content") == nil {
			c.Error(s.Node, "missing-field", "an Inline store needs `content`").
				SetHint("content: the configuration's main.tf")
		}
		return
	}
	if s.ConnectorRef == "" {
		c.Error(s.Node, "missing-field", "a %s store needs `connectorRef`", st.Type)
	}
	c.Enum(s.Node, "gitFetchType", s.GitFetchType, []string{"Branch", "Commit"}, "gitFetchType")
	switch s.GitFetchType {
	case "Branch":
		if s.Branch == "" {
			c.Error(s.Node, "missing-field", "a %s store fetched by branch needs `branch`", st.Type)
		}
	case "Commit":
		if s.CommitID == "" {
			c.Error(s.Node, "missing-field", "a %s store fetched by commit needs `commitId`", st.Type)
		}
	case "":
		c.Error(s.Node, "missing-field", "a %s store needs `gitFetchType` (Branch or Commit)", st.Type)
	}
	if config && s.FolderPath == "" {
		c.Error(s.Node, "missing-field", "%s: a %s store needs `folderPath`, the root module's folder", what, st.Type).
			SetHint("folderPath: terraform/")
	}
	if !config && (s.Paths == nil || s.Paths.Kind == yaml.SequenceNode && len(s.Paths.Content) == 0) {
		c.Error(s.Node, "missing-field", "%s: a %s store needs `paths`, the var files in the repository", what, st.Type).
			SetHint("paths: [env/prod.tfvars]")
	}
}

func terraformFlags(c Checker, flags []TerraformFlag) {
	for _, f := range flags {
		c.Enum(f.Node, "commandType", f.CommandType, terraformCommands, "commandFlags commandType")
	}
}

// terraformCloud reports a Terraform Cloud configuration as not run.
func terraformCloud(c Checker, node, cloud *yaml.Node) {
	if cloud != nil {
		c.Unsupported(pipeline.ValueAt(node, "cloudCliConfiguration"), "unsupported-field",
			"cloudCliConfiguration: Gantry runs Terraform with the worker's binary, not through Terraform Cloud's CLI integration").
			SetHint("use `configuration` with a backend that holds the state")
	}
}

// booleans checks key, value pairs of boolean fields, in order.
func booleans(c Checker, obj *yaml.Node, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		c.Boolean(obj, kv[i], kv[i+1])
	}
}
