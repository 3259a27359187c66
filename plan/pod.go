package plan

// Pod is where a containerized step group's container steps run: one pod per group run, on
// the cluster of Connector.
type Pod struct {
	Connector Connector `json:"connector"`
	// Infra is the stepGroupInfra spec as a value tree; its expressions are rendered when the
	// group starts.
	Infra any `json:"infra"`
	// SharedPaths are folders shared between the group's containers, besides the workspace.
	SharedPaths any `json:"sharedPaths,omitempty"`
	// Registries are the Docker registry connectors the images are pulled with, by connector
	// reference as the steps (and harnessImageConnectorRef) write it.
	Registries map[string]RegistryConnector `json:"registries,omitempty"`
	// Git are the Git connectors of its GitClone steps, by connector reference.
	Git map[string]GitConnector `json:"git,omitempty"`
	// Aws are the Aws connectors of its cache steps (SaveCacheS3, RestoreCacheS3), by
	// connector reference.
	Aws map[string]AwsConnector `json:"aws,omitempty"`
	// Machine, when set, makes this a CI stage's workspace on a build machine instead of a
	// pod: Connector and Infra are then empty.
	Machine *Machine `json:"machine,omitempty"`
}

// Machine is the build machine a CI stage that names a runtime asks for: its platform as the
// stage's `platform` writes it (expressions rendered when the stage starts; "" takes any) and
// the stage's delegate selectors.
type Machine struct {
	OS        string   `json:"os,omitempty"`
	Arch      string   `json:"arch,omitempty"`
	Selectors []string `json:"selectors,omitempty"`
	// Containers says some of its steps name an image: only a machine with containerd takes it.
	Containers bool `json:"containers,omitempty"`
}
