package plan

// Deployment is what a Deployment stage deploys, resolved from the service, environment,
// infrastructure and connector files when the run was submitted (spec 15.1). Manifest and
// values files are copied in, so every worker deploys exactly what was validated and a rerun
// deploys the same definition. Texts may hold expressions, rendered when a step uses them.
type Deployment struct {
	Type        string          `json:"type"` // Kubernetes
	Service     *Service        `json:"service,omitempty"`
	Environment *Environment    `json:"environment,omitempty"`
	Infra       *Infrastructure `json:"infra,omitempty"`
	// ServiceFrom and EnvFrom name the earlier stage a `useFromStage` section propagates.
	ServiceFrom string `json:"serviceFrom,omitempty"`
	EnvFrom     string `json:"envFrom,omitempty"`
}

// Service is a resolved service.
type Service struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Type        string            `json:"type"`
	Variables   []Variable        `json:"variables,omitempty"`
	Manifests   []Manifest        `json:"manifests,omitempty"`
	Artifact    *Artifact         `json:"artifact,omitempty"`
}

// Manifest is a set of manifest files (in order) and values files (later ones win).
type Manifest struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	Files          []File `json:"files,omitempty"`
	Values         []File `json:"values,omitempty"`
	SkipVersioning bool   `json:"skipVersioning,omitempty"`
}

// File is a file's path (relative to its manifest store) and content.
type File struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// Artifact is the primary artifact.
type Artifact struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	ConnectorRef string `json:"connectorRef,omitempty"`
	Registry     string `json:"registry,omitempty"`
	ImagePath    string `json:"imagePath"`
	Tag          string `json:"tag"`
}

// Environment is a resolved environment with the overrides for the stage's service.
type Environment struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Description      string            `json:"description,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	Type             string            `json:"type"`
	Variables        []Variable        `json:"variables,omitempty"`
	ServiceOverrides []Variable        `json:"serviceOverrides,omitempty"`
	// GroupRef is the environment group the environment was deployed through (spec 21.3).
	GroupRef string `json:"groupRef,omitempty"`
}

// Infrastructure is a resolved infrastructure definition and its cluster connector.
type Infrastructure struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Tags        map[string]string `json:"tags,omitempty"`
	Namespace   string            `json:"namespace"`
	ReleaseName string            `json:"releaseName,omitempty"`
	Connector   Connector         `json:"connector"`
}

// Connector says how a worker reaches the cluster. Secrets are named, never held.
type Connector struct {
	ID                    string `json:"id"`
	Name                  string `json:"name"`
	Type                  string `json:"type"` // InheritFromDelegate, Kubeconfig, ManualConfig
	MasterURL             string `json:"masterUrl,omitempty"`
	TokenRef              string `json:"tokenRef,omitempty"`
	CACertRef             string `json:"caCertRef,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTlsVerify,omitempty"`
	Kubeconfig            string `json:"kubeconfig,omitempty"`
	Context               string `json:"context,omitempty"`
}
