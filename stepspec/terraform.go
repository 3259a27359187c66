package stepspec

import "gopkg.in/yaml.v3"

// The Terraform step types, run by the Terraform family (one handler each) with OpenTofu or
// Terraform on the worker.
const (
	TerraformPlan     = "TerraformPlan"
	TerraformApply    = "TerraformApply"
	TerraformDestroy  = "TerraformDestroy"
	TerraformRollback = "TerraformRollback"
)

// TerraformPlanSpec plans a configuration (command Apply or Destroy) and keeps the plan,
// sealed, for the TerraformApply or TerraformDestroy of the same provisioner that inherits it.
type TerraformPlanSpec struct {
	Node                  *yaml.Node           `yaml:"-" json:"-"`
	ProvisionerIdentifier string               `yaml:"provisionerIdentifier" json:"provisionerIdentifier" gantry:"required"`
	Configuration         *TerraformPlanConfig `yaml:"configuration" json:"configuration"`
	CloudCliConfiguration *yaml.Node           `yaml:"cloudCliConfiguration" json:"-"`
	DelegateSelectors     *yaml.Node           `yaml:"delegateSelectors" json:"-"`
}

// TerraformPlanConfig is what a plan is made of.
type TerraformPlanConfig struct {
	TerraformFiles                   `yaml:",inline"`
	Command                          string          `yaml:"command" json:"command" gantry:"required"`
	SecretManagerRef                 string          `yaml:"secretManagerRef" json:"-" gantry:"required"`
	CommandFlags                     []TerraformFlag `yaml:"commandFlags" json:"commandFlags"`
	ExportTerraformPlanJson          Text            `yaml:"exportTerraformPlanJson" json:"exportTerraformPlanJson"`
	ExportTerraformHumanReadablePlan string          `yaml:"exportTerraformHumanReadablePlan" json:"-"`
	SkipRefreshCommand               Text            `yaml:"skipRefreshCommand" json:"skipRefreshCommand"`
	SkipStateStorage                 string          `yaml:"skipStateStorage" json:"-"`
	StoreTfPlanOnDelegate            string          `yaml:"storeTfPlanOnDelegate" json:"-"`
	CreateRemoteWorkspaceWithPrefix  string          `yaml:"createRemoteWorkspaceWithPrefix" json:"-"`
}

// TerraformFiles are a configuration's files and settings, shared by a plan and an inline
// apply or destroy. The targets are read as written (Targets) by validation and as rendered
// (TargetList: a list, or one string) by the family.
type TerraformFiles struct {
	Node                 *yaml.Node              `yaml:"-" json:"-"`
	ConfigFiles          *TerraformConfigFiles   `yaml:"configFiles" json:"configFiles" gantry:"required"`
	VarFiles             []TerraformVarFileEntry `yaml:"varFiles" json:"varFiles"`
	BackendConfig        *TerraformBackendConfig `yaml:"backendConfig" json:"backendConfig"`
	EnvironmentVariables []NameTypeValue         `yaml:"environmentVariables" json:"environmentVariables"`
	Targets              *yaml.Node              `yaml:"targets" json:"-"`
	TargetList           any                     `yaml:"-" json:"targets"`
	Workspace            string                  `yaml:"workspace" json:"workspace"`
	ProviderCredential   *yaml.Node              `yaml:"providerCredential" json:"-"`
}

// TerraformConfigFiles is where the root module lives.
type TerraformConfigFiles struct {
	Node         *yaml.Node      `yaml:"-" json:"-"`
	Store        *TerraformStore `yaml:"store" json:"store" gantry:"required"`
	ModuleSource *yaml.Node      `yaml:"moduleSource" json:"-"`
}

// TerraformStore is a Git store (Git, Github, GitLab, Bitbucket) or an Inline one (content).
type TerraformStore = Typed[TerraformStoreSpec]

// TerraformStoreSpec locates files in a repository, or holds one file's content. The paths
// are read as written (Paths) by validation and as rendered (PathList) by the family.
type TerraformStoreSpec struct {
	Node         *yaml.Node `yaml:"-" json:"-"`
	ConnectorRef string     `yaml:"connectorRef" json:"connectorRef"`
	GitFetchType string     `yaml:"gitFetchType" json:"gitFetchType"`
	Branch       string     `yaml:"branch" json:"branch"`
	CommitID     string     `yaml:"commitId" json:"commitId"`
	FolderPath   string     `yaml:"folderPath" json:"folderPath"`
	RepoName     string     `yaml:"repoName" json:"repoName"`
	Paths        *yaml.Node `yaml:"paths" json:"-"`
	PathList     any        `yaml:"-" json:"paths"`
	Content      string     `yaml:"content" json:"content"`
}

// TerraformVarFileEntry wraps one var file.
type TerraformVarFileEntry struct {
	Node    *yaml.Node        `yaml:"-" json:"-"`
	VarFile *TerraformVarFile `yaml:"varFile" json:"varFile" gantry:"required"`
}

// TerraformVarFile is an Inline var file (content) or a Remote one (a store's paths).
type TerraformVarFile struct {
	Node       *yaml.Node            `yaml:"-" json:"-"`
	Identifier string                `yaml:"identifier" json:"identifier" gantry:"required"`
	Type       string                `yaml:"type" json:"type" gantry:"required"`
	Spec       *TerraformVarFileSpec `yaml:"spec" json:"spec" gantry:"required"`
}

// TerraformVarFileSpec holds the content or the store.
type TerraformVarFileSpec struct {
	Node     *yaml.Node      `yaml:"-" json:"-"`
	Type     string          `yaml:"type" json:"type"`
	Content  string          `yaml:"content" json:"content"`
	Store    *TerraformStore `yaml:"store" json:"store"`
	Optional Text            `yaml:"optional" json:"optional"`
}

// TerraformBackendConfig is the backend's settings: Inline content or a Remote store.
type TerraformBackendConfig struct {
	Node *yaml.Node            `yaml:"-" json:"-"`
	Type string                `yaml:"type" json:"type"`
	Spec *TerraformVarFileSpec `yaml:"spec" json:"spec"`
}

// TerraformFlag is extra command-line flags for one command.
type TerraformFlag struct {
	Node        *yaml.Node `yaml:"-" json:"-"`
	CommandType string     `yaml:"commandType" json:"commandType" gantry:"required"`
	Flag        string     `yaml:"flag" json:"flag" gantry:"required"`
}

// TerraformApplySpec applies the plan of its provisioner's TerraformPlan (InheritFromPlan) or
// an inline configuration; TerraformDestroy destroys with the same shapes (and
// InheritFromApply), so both steps' specs are this type.
type TerraformApplySpec struct {
	Node                  *yaml.Node           `yaml:"-" json:"-"`
	ProvisionerIdentifier string               `yaml:"provisionerIdentifier" json:"provisionerIdentifier" gantry:"required"`
	Configuration         *TerraformStepConfig `yaml:"configuration" json:"configuration"`
	CloudCliConfiguration *yaml.Node           `yaml:"cloudCliConfiguration" json:"-"`
	DelegateSelectors     *yaml.Node           `yaml:"delegateSelectors" json:"-"`
	Metadata              string               `yaml:"metadata" json:"-"`
}

// TerraformStepConfig is an apply's or destroy's configuration.
type TerraformStepConfig struct {
	Node                            *yaml.Node      `yaml:"-" json:"-"`
	Type                            string          `yaml:"type" json:"type" gantry:"required"`
	Spec                            *TerraformFiles `yaml:"spec" json:"spec"`
	CommandFlags                    []TerraformFlag `yaml:"commandFlags" json:"commandFlags"`
	SkipRefreshCommand              Text            `yaml:"skipRefreshCommand" json:"skipRefreshCommand"`
	SkipStateStorage                string          `yaml:"skipStateStorage" json:"-"`
	CreateRemoteWorkspaceWithPrefix string          `yaml:"createRemoteWorkspaceWithPrefix" json:"-"`
}

// TerraformRollbackSpec re-applies its provisioner's last successful configuration before this
// execution, or destroys what this execution created first.
type TerraformRollbackSpec struct {
	Node                  *yaml.Node      `yaml:"-" json:"-"`
	ProvisionerIdentifier string          `yaml:"provisionerIdentifier" json:"provisionerIdentifier" gantry:"required"`
	CommandFlags          []TerraformFlag `yaml:"commandFlags" json:"commandFlags"`
	SkipRefreshCommand    Text            `yaml:"skipRefreshCommand" json:"skipRefreshCommand"`
	DelegateSelectors     *yaml.Node      `yaml:"delegateSelectors" json:"-"`
}
