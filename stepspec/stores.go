package stepspec

import "gopkg.in/yaml.v3"

// ManifestStore locates manifest files: `Local` stores name paths relative to the service
// file, read when the run is submitted; Git stores (Git, Github, Gitlab, Bitbucket) name a
// connector, a branch or commit and paths in the repository, fetched by a worker when the
// stage starts. Steps' stores are resolved into manifests before the run: their families read
// the manifests, not the stores (the spec fields holding stores are json:"-").
type ManifestStore = Typed[ManifestStoreSpec]

// ManifestStoreSpec lists files and folders, and for Git stores where they are.
type ManifestStoreSpec struct {
	Node         *yaml.Node `yaml:"-" json:"-"`
	Paths        []string   `yaml:"paths" json:"paths"`
	ConnectorRef string     `yaml:"connectorRef" json:"connectorRef"`
	GitFetchType string     `yaml:"gitFetchType" json:"gitFetchType"`
	Branch       string     `yaml:"branch" json:"branch"`
	CommitID     string     `yaml:"commitId" json:"commitId"`
	FolderPath   string     `yaml:"folderPath" json:"folderPath"`
	RepoName     string     `yaml:"repoName" json:"repoName"`
	// OciHelmChart: the registry connector under config, and the repository path the chart
	// is below.
	BasePath string          `yaml:"basePath" json:"basePath"`
	Config   *OciChartConfig `yaml:"config" json:"config"`
	// S3: the bucket (and its region) the paths are keys or key prefixes in.
	BucketName string `yaml:"bucketName" json:"bucketName"`
	Region     string `yaml:"region" json:"region"`
}

// OciChartConfig is an OciHelmChart store's registry: `Generic` names an OciHelmRepo connector
// (ECR and GAR reach cloud registries through cloud connectors, not run yet).
type OciChartConfig = Typed[OciChartConfigSpec]

// OciChartConfigSpec names the registry's connector.
type OciChartConfigSpec struct {
	Node         *yaml.Node `yaml:"-" json:"-"`
	ConnectorRef string     `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
}
