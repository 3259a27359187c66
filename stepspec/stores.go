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

// ManifestSpec is where a manifest's files are and how they are rendered: a service's manifest,
// or a K8sApply step's own. The front end resolves it into files before the run (no family reads
// it), so it has YAML keys only.
type ManifestSpec struct {
	Node                      *yaml.Node     `yaml:"-"`
	Store                     *ManifestStore `yaml:"store" gantry:"required"`
	ValuesPaths               []string       `yaml:"valuesPaths"`
	SkipResourceVersioning    string         `yaml:"skipResourceVersioning"`
	EnableDeclarativeRollback string         `yaml:"enableDeclarativeRollback"`
	// Kustomize: the overlay to build below the store's folder, and patch files of the same
	// store added to its patches; plugins are refused (unsupported).
	OverlayConfiguration *OverlayConfiguration `yaml:"overlayConfiguration"`
	PluginPath           string                `yaml:"pluginPath"`
	PatchesPaths         []string              `yaml:"patchesPaths"`
	// OpenshiftTemplate: param files of the template's store, read as `oc process
	// --param-file` reads them.
	ParamsPaths []string `yaml:"paramsPaths"`
	// HelmChart: the chart is the store's folder (Local and Git stores), or chartName at
	// chartVersion (the latest when empty) of a chart repository (Http and OciHelmChart stores).
	ChartName    string `yaml:"chartName"`
	ChartVersion string `yaml:"chartVersion"`
	HelmVersion  string `yaml:"helmVersion"`
	SubChartPath string `yaml:"subChartPath"`
}

// OverlayConfiguration names the folder, relative to a Kustomize store's folder, whose
// kustomization is built.
type OverlayConfiguration struct {
	Node                    *yaml.Node `yaml:"-"`
	KustomizeYamlFolderPath string     `yaml:"kustomizeYamlFolderPath" gantry:"required"`
}
