package stepspec

import "gopkg.in/yaml.v3"

// StepGroupInfra is a containerized step group's infrastructure: `type: KubernetesDirect`
// runs the group's steps as containers of one pod on a cluster.
type StepGroupInfra = Typed[PodInfra]

// PodInfra is the pod a containerized step group (or a Container step) runs in.
type PodInfra struct {
	Node                         *yaml.Node        `yaml:"-"`
	ConnectorRef                 string            `yaml:"connectorRef" gantry:"required"`
	Namespace                    string            `yaml:"namespace"` // DefaultNamespace when empty
	Annotations                  map[string]string `yaml:"annotations"`
	Labels                       map[string]string `yaml:"labels"`
	AutomountServiceAccountToken string            `yaml:"automountServiceAccountToken"`
	ContainerSecurityContext     *SecurityContext  `yaml:"containerSecurityContext"`
	HarnessImageConnectorRef     string            `yaml:"harnessImageConnectorRef"`
	HostNames                    []string          `yaml:"hostNames"`
	InitTimeout                  string            `yaml:"initTimeout"`
	NodeSelector                 map[string]string `yaml:"nodeSelector"`
	OS                           string            `yaml:"os"`
	PriorityClassName            string            `yaml:"priorityClassName"`
	RunAsUser                    string            `yaml:"runAsUser"`
	ServiceAccountName           string            `yaml:"serviceAccountName"`
	Tolerations                  []Toleration      `yaml:"tolerations"`
	Volumes                      []PodVolume       `yaml:"volumes"`
	ImagePullPolicy              string            `yaml:"imagePullPolicy"`
	PodSpecOverlay               string            `yaml:"podSpecOverlay"`
	// Resources is a Container step's own infrastructure's container resources.
	Resources *ContainerResources `yaml:"resources"`
}

// DefaultNamespace is where a pod whose infrastructure names no namespace runs, as Kubernetes
// itself defaults an object without one.
const DefaultNamespace = "default"

// SecurityContext is the Kubernetes securityContext of the group's containers.
type SecurityContext struct {
	Node                     *yaml.Node    `yaml:"-"`
	AllowPrivilegeEscalation string        `yaml:"allowPrivilegeEscalation"`
	Capabilities             *Capabilities `yaml:"capabilities"`
	Privileged               string        `yaml:"privileged"`
	ProcMount                string        `yaml:"procMount"`
	ReadOnlyRootFilesystem   string        `yaml:"readOnlyRootFilesystem"`
	RunAsGroup               string        `yaml:"runAsGroup"`
	RunAsNonRoot             string        `yaml:"runAsNonRoot"`
	RunAsUser                string        `yaml:"runAsUser"`
}

// Capabilities are Linux capabilities to add and drop.
type Capabilities struct {
	Node *yaml.Node `yaml:"-"`
	Add  []string   `yaml:"add"`
	Drop []string   `yaml:"drop"`
}

// Toleration is a Kubernetes toleration.
type Toleration struct {
	Node              *yaml.Node `yaml:"-"`
	Effect            string     `yaml:"effect"`
	Key               string     `yaml:"key"`
	Operator          string     `yaml:"operator"`
	TolerationSeconds string     `yaml:"tolerationSeconds"`
	Value             string     `yaml:"value"`
}

// PodVolume is a volume mounted into every container of the pod.
type PodVolume struct {
	Node      *yaml.Node     `yaml:"-"`
	MountPath string         `yaml:"mountPath" gantry:"required"`
	Type      string         `yaml:"type" gantry:"required"`
	Spec      *PodVolumeSpec `yaml:"spec"`
}

// PodVolumeSpec holds the settings of each volume type: EmptyDir (medium, size), HostPath
// (path, type), PersistentVolumeClaim (claimName, readOnly), ConfigMap and Secret (name,
// optional).
type PodVolumeSpec struct {
	Node      *yaml.Node `yaml:"-"`
	Medium    string     `yaml:"medium"`
	Size      string     `yaml:"size"`
	Path      string     `yaml:"path"`
	Type      string     `yaml:"type"`
	ClaimName string     `yaml:"claimName"`
	ReadOnly  string     `yaml:"readOnly"`
	Name      string     `yaml:"name"`
	Optional  string     `yaml:"optional"`
}

// ContainerResources are a container's resource limits (and requests).
type ContainerResources struct {
	Node     *yaml.Node      `yaml:"-"`
	Limits   *ResourceAmount `yaml:"limits"`
	Requests *ResourceAmount `yaml:"requests"`
}

// ResourceAmount is an amount of CPU and memory.
type ResourceAmount struct {
	Node   *yaml.Node `yaml:"-"`
	CPU    string     `yaml:"cpu"`
	Memory string     `yaml:"memory"`
}
