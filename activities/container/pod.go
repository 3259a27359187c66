package container

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// Labels and annotations on what Gantry creates for a group.
const (
	labelManaged    = "app.kubernetes.io/managed-by"
	labelPod        = "gantry.io/pod"
	annWorkflow     = "gantry.io/workflow-id"
	annRun          = "gantry.io/run-id"
	annExecution    = "gantry.io/execution-id"
	annGroup        = "gantry.io/group"
	managedBy       = "gantry"
	helperContainer = "gantry-init"
)

// DefaultInitTimeout is how long a step waits for its container to start when the group's
// infrastructure sets no initTimeout.
const DefaultInitTimeout = 10 * time.Minute

// text is a rendered scalar: a string, or a number or boolean an expression rendered to.
type text = stepspec.Text

// infra is the rendered stepGroupInfra spec.
type infra struct {
	Namespace                    text            `json:"namespace"`
	Annotations                  map[string]text `json:"annotations"`
	Labels                       map[string]text `json:"labels"`
	AutomountServiceAccountToken text            `json:"automountServiceAccountToken"`
	ContainerSecurityContext     *struct {
		AllowPrivilegeEscalation text `json:"allowPrivilegeEscalation"`
		Capabilities             *struct {
			Add  []text `json:"add"`
			Drop []text `json:"drop"`
		} `json:"capabilities"`
		Privileged             text `json:"privileged"`
		ProcMount              text `json:"procMount"`
		ReadOnlyRootFilesystem text `json:"readOnlyRootFilesystem"`
		RunAsGroup             text `json:"runAsGroup"`
		RunAsNonRoot           text `json:"runAsNonRoot"`
		RunAsUser              text `json:"runAsUser"`
	} `json:"containerSecurityContext"`
	HarnessImageConnectorRef text            `json:"harnessImageConnectorRef"`
	HostNames                []text          `json:"hostNames"`
	InitTimeout              text            `json:"initTimeout"`
	NodeSelector             map[string]text `json:"nodeSelector"`
	PriorityClassName        text            `json:"priorityClassName"`
	RunAsUser                text            `json:"runAsUser"`
	ServiceAccountName       text            `json:"serviceAccountName"`
	Tolerations              []struct {
		Effect            text `json:"effect"`
		Key               text `json:"key"`
		Operator          text `json:"operator"`
		TolerationSeconds text `json:"tolerationSeconds"`
		Value             text `json:"value"`
	} `json:"tolerations"`
	Volumes []struct {
		MountPath text `json:"mountPath"`
		Type      text `json:"type"`
		Spec      struct {
			Medium    text `json:"medium"`
			Size      text `json:"size"`
			Path      text `json:"path"`
			Type      text `json:"type"`
			ClaimName text `json:"claimName"`
			ReadOnly  text `json:"readOnly"`
			Name      text `json:"name"`
			Optional  text `json:"optional"`
		} `json:"spec"`
	} `json:"volumes"`
	ImagePullPolicy text `json:"imagePullPolicy"`
	PodSpecOverlay  text `json:"podSpecOverlay"`
	Resources       *struct {
		Limits, Requests *struct{ CPU, Memory text }
	} `json:"resources"`
}

func decodeInfra(v any) (*infra, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var in infra
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, contract.Fail(contract.Unknown, "stepGroupInfra: %v", err)
	}
	if in.Namespace == "" {
		return nil, contract.Fail(contract.Unknown, "stepGroupInfra: namespace is empty")
	}
	return &in, nil
}

// initTimeout is how long the group's containers may take to start.
func (in *infra) initTimeout() time.Duration {
	if d, err := time.ParseDuration(string(in.InitTimeout)); err == nil && d > 0 {
		return d
	}
	return DefaultInitTimeout
}

// SecretEnv is the environment variable that carries a secret in the group's containers.
func SecretEnv(id string) string {
	sum := sha256.Sum256([]byte(id))
	return wire.SecretPrefix + strings.ToUpper(hex.EncodeToString(sum[:8]))
}

// Placeholder stands for a secret in the commands sent to the helper.
func Placeholder(id string) string { return "@@" + SecretEnv(id) + "@@" }

func boolOf(t text) *bool {
	if t == "" {
		return nil
	}
	b := strings.EqualFold(string(t), "true")
	return &b
}

func intOf(t text) (*int64, error) {
	if t == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "%q is not a whole number", string(t))
	}
	return &n, nil
}

// podObjects builds the group's pod and the Secrets it reads: one with the steps' secrets,
// and one with the registry credentials of its images when any has credentials.
func podObjects(in contract.PodInput, inf *infra, secretData map[string][]byte, pull []byte, helperImage, buildkitImage string) (*corev1.Pod, []*corev1.Secret, error) {
	ns := string(inf.Namespace)
	meta := func(name string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{labelManaged: managedBy, labelPod: in.Name},
			Annotations: map[string]string{annWorkflow: in.WorkflowID, annRun: in.RunID,
				annExecution: in.ExecutionID, annGroup: in.Group}}
		return m
	}
	var secrets []*corev1.Secret
	if len(secretData) > 0 {
		s := &corev1.Secret{ObjectMeta: meta(in.Name), Type: corev1.SecretTypeOpaque, Data: secretData}
		secrets = append(secrets, s)
	}
	pod := &corev1.Pod{ObjectMeta: meta(in.Name)}
	for k, v := range inf.Labels {
		if _, ours := pod.Labels[k]; !ours {
			pod.Labels[k] = string(v)
		}
	}
	for k, v := range inf.Annotations {
		if _, ours := pod.Annotations[k]; !ours {
			pod.Annotations[k] = string(v)
		}
	}
	if err := schedule(&pod.Spec, inf); err != nil {
		return nil, nil, err
	}
	spec := &pod.Spec
	if pull != nil {
		s := &corev1.Secret{ObjectMeta: meta(in.Name + "-pull"), Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: pull}}
		secrets = append(secrets, s)
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s.Name}}
	}

	volumes, mounts, err := podVolumes(in, inf)
	if err != nil {
		return nil, nil, err
	}
	spec.Volumes = volumes
	if spec.Containers, err = stepContainers(in, inf, mounts, len(secretData) > 0, buildkitImage); err != nil {
		return nil, nil, err
	}
	spec.InitContainers = []corev1.Container{{
		Name: helperContainer, Image: helperImage, Command: []string{"/gantry-helper", "install", wire.HelperDir},
		VolumeMounts:    []corev1.VolumeMount{{Name: "gantry", MountPath: wire.HelperDir}},
		ImagePullPolicy: corev1.PullIfNotPresent,
	}}
	// Last, so that the steps' containers start first.
	spec.Containers = append(spec.Containers, corev1.Container{
		Name: contract.PodHelperContainer, Image: helperImage, Command: []string{"/gantry-helper", "wait"}, WorkingDir: wire.Workspace,
		VolumeMounts: mounts, ImagePullPolicy: corev1.PullIfNotPresent,
	})
	if err := overlay(pod, string(inf.PodSpecOverlay)); err != nil {
		return nil, nil, err
	}
	return pod, secrets, nil
}

// schedule sets where and as whom the pod runs: restart policy, service account, node
// selector, tolerations, host aliases and the user it runs as.
func schedule(spec *corev1.PodSpec, inf *infra) error {
	spec.RestartPolicy = corev1.RestartPolicyNever
	grace := int64(5)
	spec.TerminationGracePeriodSeconds = &grace
	spec.ServiceAccountName = string(inf.ServiceAccountName)
	spec.AutomountServiceAccountToken = boolOf(inf.AutomountServiceAccountToken)
	spec.PriorityClassName = string(inf.PriorityClassName)
	if len(inf.NodeSelector) > 0 {
		spec.NodeSelector = map[string]string{}
		for k, v := range inf.NodeSelector {
			spec.NodeSelector[k] = string(v)
		}
	}
	for _, t := range inf.Tolerations {
		tol := corev1.Toleration{Key: string(t.Key), Operator: corev1.TolerationOperator(t.Operator), Value: string(t.Value), Effect: corev1.TaintEffect(t.Effect)}
		secs, err := intOf(t.TolerationSeconds)
		if err != nil {
			return err
		}
		tol.TolerationSeconds = secs
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	if len(inf.HostNames) > 0 {
		// The reference's hostNames are aliases of the pod's own address.
		alias := corev1.HostAlias{IP: "127.0.0.1"}
		for _, h := range inf.HostNames {
			alias.Hostnames = append(alias.Hostnames, string(h))
		}
		spec.HostAliases = []corev1.HostAlias{alias}
	}
	uid, err := intOf(inf.RunAsUser)
	if err != nil {
		return err
	}
	if uid != nil {
		spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: uid}
	}
	return nil
}

// podVolumes returns the pod's volumes and where every step container mounts them: the
// helper's folder, the workspace, the stage's shared paths and the infrastructure's volumes.
func podVolumes(in contract.PodInput, inf *infra) ([]corev1.Volume, []corev1.VolumeMount, error) {
	mounts := []corev1.VolumeMount{{Name: "gantry", MountPath: wire.HelperDir}, {Name: "workspace", MountPath: wire.Workspace}}
	volumes := []corev1.Volume{
		{Name: "gantry", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	shared, _ := in.Pod.SharedPaths.([]any)
	for i, p := range shared {
		path := fmt.Sprint(p)
		if path == "" || path == wire.Workspace {
			continue
		}
		name := fmt.Sprintf("shared-%d", i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path})
	}
	for i, v := range inf.Volumes {
		name := fmt.Sprintf("volume-%d", i)
		vs := corev1.VolumeSource{}
		readOnly := boolOf(v.Spec.ReadOnly)
		switch v.Type {
		case "EmptyDir":
			vs.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(v.Spec.Medium)}
			if v.Spec.Size != "" {
				q, err := resource.ParseQuantity(string(v.Spec.Size))
				if err != nil {
					return nil, nil, contract.Fail(contract.Unknown, "volume %s: size %q: %v", v.MountPath, v.Spec.Size, err)
				}
				vs.EmptyDir.SizeLimit = &q
			}
		case "HostPath":
			t := corev1.HostPathType(v.Spec.Type)
			vs.HostPath = &corev1.HostPathVolumeSource{Path: string(v.Spec.Path), Type: &t}
		case "PersistentVolumeClaim":
			vs.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: string(v.Spec.ClaimName), ReadOnly: readOnly != nil && *readOnly}
		case "ConfigMap":
			vs.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: string(v.Spec.Name)}, Optional: boolOf(v.Spec.Optional)}
		case "Secret":
			vs.Secret = &corev1.SecretVolumeSource{SecretName: string(v.Spec.Name), Optional: boolOf(v.Spec.Optional)}
		default:
			return nil, nil, contract.Fail(contract.Unknown, "volume %s: type %q is not EmptyDir, HostPath, PersistentVolumeClaim, ConfigMap or Secret", v.MountPath, v.Type)
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: vs})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: string(v.MountPath), ReadOnly: readOnly != nil && *readOnly})
	}
	return volumes, mounts, nil
}

// stepContainers returns a container per step of the group, each waiting for the helper to
// run its commands; withSecrets gives each the group's Secret as environment variables.
func stepContainers(in contract.PodInput, inf *infra, mounts []corev1.VolumeMount, withSecrets bool, buildkitImage string) ([]corev1.Container, error) {
	var out []corev1.Container
	for _, c := range in.Containers {
		if kinds[c.Type].builds() {
			// BuildKit runs each RUN line in a container of its own: it needs privileges.
			c.Image, c.Privileged = buildkitImage, true
			if c.ImagePullPolicy == "" {
				c.ImagePullPolicy = string(corev1.PullIfNotPresent)
			}
		}
		k := corev1.Container{
			Name: c.Name, Image: c.Image, Command: []string{wire.Helper, "wait"}, WorkingDir: wire.Workspace,
			VolumeMounts: mounts, ImagePullPolicy: corev1.PullPolicy(c.ImagePullPolicy),
		}
		if k.ImagePullPolicy == "" {
			k.ImagePullPolicy = corev1.PullPolicy(inf.ImagePullPolicy)
		}
		if withSecrets {
			k.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: in.Name}}}}
		}
		sc, err := securityContext(inf, c)
		if err != nil {
			return nil, err
		}
		k.SecurityContext = sc
		if k.Resources, err = resources(inf, c); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// overlay merges a podSpecOverlay into the pod, as the reference does: a partial pod
// (`metadata` labels and annotations, `spec`) or a bare pod spec, merged strategically
// (lists of containers, volumes, ... by name). It changes the containers Gantry made, never
// adds one, and leaves the init containers alone.
func overlay(pod *corev1.Pod, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || doc == nil {
		return contract.Fail(contract.Unknown, "podSpecOverlay is not a YAML mapping (%v)", err)
	}
	specPatch, ok := doc["spec"].(map[string]any)
	if !ok {
		specPatch = doc
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		for key, into := range map[string]map[string]string{"labels": pod.Labels, "annotations": pod.Annotations} {
			m, _ := md[key].(map[string]any)
			for k, v := range m {
				if _, ours := into[k]; !ours {
					into[k] = fmt.Sprint(v)
				}
			}
		}
	}
	orig, err := json.Marshal(pod.Spec)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(specPatch)
	if err != nil {
		return err
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.PodSpec{})
	if err != nil {
		return contract.Fail(contract.Unknown, "podSpecOverlay: %v", err)
	}
	var out corev1.PodSpec
	if err := json.Unmarshal(merged, &out); err != nil {
		return contract.Fail(contract.Unknown, "podSpecOverlay: %v", err)
	}
	ours := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		ours[c.Name] = true
	}
	out.Containers = slices.DeleteFunc(out.Containers, func(c corev1.Container) bool { return !ours[c.Name] })
	out.InitContainers = pod.Spec.InitContainers
	pod.Spec = out
	return nil
}

// securityContext is the group's container security context with the step's own settings.
func securityContext(inf *infra, c contract.PodContainer) (*corev1.SecurityContext, error) {
	sc := &corev1.SecurityContext{}
	set := false
	if g := inf.ContainerSecurityContext; g != nil {
		sc.AllowPrivilegeEscalation = boolOf(g.AllowPrivilegeEscalation)
		sc.Privileged = boolOf(g.Privileged)
		sc.ReadOnlyRootFilesystem = boolOf(g.ReadOnlyRootFilesystem)
		sc.RunAsNonRoot = boolOf(g.RunAsNonRoot)
		var err error
		if sc.RunAsUser, err = intOf(g.RunAsUser); err != nil {
			return nil, err
		}
		if sc.RunAsGroup, err = intOf(g.RunAsGroup); err != nil {
			return nil, err
		}
		if g.ProcMount != "" {
			pm := corev1.ProcMountType(g.ProcMount)
			sc.ProcMount = &pm
		}
		if g.Capabilities != nil {
			sc.Capabilities = &corev1.Capabilities{}
			for _, a := range g.Capabilities.Add {
				sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(a))
			}
			for _, d := range g.Capabilities.Drop {
				sc.Capabilities.Drop = append(sc.Capabilities.Drop, corev1.Capability(d))
			}
		}
		set = true
	}
	if c.Privileged {
		t := true
		sc.Privileged, set = &t, true
	}
	if c.RunAsUser != nil {
		sc.RunAsUser, set = c.RunAsUser, true
	}
	if !set {
		return nil, nil
	}
	return sc, nil
}

// resources are a step's limits (the reference sets no requests for step containers: they
// run one at a time).
func resources(inf *infra, c contract.PodContainer) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	cpu, mem := c.CPU, c.Memory
	if inf.Resources != nil && inf.Resources.Limits != nil {
		if cpu == "" {
			cpu = string(inf.Resources.Limits.CPU)
		}
		if mem == "" {
			mem = string(inf.Resources.Limits.Memory)
		}
	}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return r, contract.Fail(contract.Unknown, "container %s: %s limit %q: %v", c.Name, name, v, err)
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = q
	}
	return r, nil
}

// dockerConfig is the .dockerconfigjson of registries with credentials.
func dockerConfig(creds map[string][2]string) []byte {
	if len(creds) == 0 {
		return nil
	}
	auths := map[string]map[string]string{}
	for host, c := range creds {
		auths[host] = map[string]string{"username": c[0], "password": c[1],
			"auth": base64.StdEncoding.EncodeToString([]byte(c[0] + ":" + c[1]))}
	}
	b, _ := json.Marshal(map[string]any{"auths": auths})
	return b
}

// registryHost is the host a registry connector's URL names, as image references and
// .dockerconfigjson name it.
func registryHost(r plan.RegistryConnector) string {
	u := strings.TrimPrefix(strings.TrimPrefix(r.URL, "https://"), "http://")
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/v2")
	if u == "index.docker.io" || u == "registry-1.docker.io" || u == "docker.io" || u == "" {
		return "https://index.docker.io/v1/"
	}
	return strings.SplitN(u, "/", 2)[0]
}
