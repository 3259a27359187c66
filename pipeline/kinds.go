package pipeline

import (
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/reference"
)

// Kind is a `type` field with the values Gantry runs and the values the reference defines.
// A value Gantry runs is fine; a value only the reference defines is unsupported (valid YAML
// Gantry cannot act on yet); any other value is an error.
type Kind struct {
	What string   // "manifest type"
	Code string   // the unsupported diagnostic's code
	Runs []string // the values Gantry runs
	// Reference lists what the reference defines; nil when no published schema lists the
	// values (connectors), so every value Gantry does not run is unsupported, never invalid.
	Reference []string
	Hint      string
}

// Check reports value at pos; it returns false unless Gantry runs the value (or it is an
// expression resolved later).
func (k Kind) Check(diags *diag.List, pos diag.Pos, value string) bool {
	if value == "" || strings.Contains(value, "<+") || slices.Contains(k.Runs, value) {
		return true
	}
	if k.Reference == nil || slices.Contains(k.Reference, value) {
		format := "%s %s is valid in the reference, but Gantry does not run it yet (Gantry runs %s)"
		if k.Reference == nil {
			format = "%s %s: Gantry does not use it yet (it uses %s)"
		}
		d := diags.Unsupportedf(pos, k.Code, format, k.What, value, strings.Join(k.Runs, ", "))
		if k.Hint != "" {
			d.SetHint("%s", k.Hint)
		}
		return false
	}
	all := append(slices.Clone(k.Runs), k.Reference...)
	d := diags.Errorf(pos, "enum", "%s %q does not exist", k.What, value)
	if s := Closest(value, all); s != "" {
		d.SetHint("did you mean %q? (values are case-sensitive)", s)
	} else {
		d.SetHint("Gantry runs %s", strings.Join(k.Runs, ", "))
	}
	return false
}

// The kinds of the entity files' typed objects.
var (
	ServiceDefinitionKind = Kind{What: "service deployment type", Code: "unsupported-deployment-type",
		Runs: []string{"Kubernetes", "NativeHelm", "AwsLambda", "ECS", "Asg", "CustomDeployment", "Ssh"}, Reference: reference.ServiceDefinitionTypes}
	ManifestKind = Kind{What: "manifest type", Code: "unsupported-manifest-type",
		Runs: []string{"K8sManifest", "Values", "Kustomize", "KustomizePatches", "HelmChart", "OpenshiftTemplate", "OpenshiftParam", "AwsLambdaFunctionDefinition", "AwsLambdaFunctionAliasDefinition",
			"EcsTaskDefinition", "EcsServiceDefinition", "EcsScalableTargetDefinition", "EcsScalingPolicyDefinition",
			"AsgLaunchTemplate", "AsgConfiguration", "AsgScalingPolicy", "AsgScheduledUpdateGroupAction"}, Reference: reference.ManifestTypes}
	// Local is Gantry's own store: files beside the service. Git stores are fetched by workers.
	ManifestStoreKind = Kind{What: "manifest store", Code: "unsupported-manifest-store",
		Runs: []string{"Local", "Git", "Github", "GitLab", "Bitbucket", "Http", "OciHelmChart", "S3"}, Reference: reference.StoreTypes,
		Hint: "Gantry reads manifests from files beside the service (`store: {type: Local, spec: {paths: [...]}}`), from Git (`type: Git`, `Github`, `GitLab` or `Bitbucket`), from S3 buckets (`S3`), and Helm charts from chart repositories (`Http`, `OciHelmChart`)"}
	// OciChartConfigKind is an OciHelmChart store's registry kind.
	OciChartConfigKind = Kind{What: "OCI chart registry type", Code: "unsupported-manifest-store",
		Runs: []string{"Generic"}, Reference: []string{"ECR", "GAR"},
		Hint: "Gantry pulls charts from any OCI registry through an OciHelmRepo connector (`config: {type: Generic, spec: {connectorRef: ...}}`)"}
	ArtifactSourceKind = Kind{What: "artifact source type", Code: "unsupported-artifact-type",
		Runs:      []string{"DockerRegistry", "Gcr", "Ecr", "Acr", "Nexus3Registry", "ArtifactoryRegistry", "CustomArtifact", "AmazonS3", "AmazonMachineImage"},
		Reference: reference.ArtifactSourceTypes}
	InfrastructureKind = Kind{What: "infrastructure type", Code: "unsupported-infrastructure-type",
		Runs: []string{"KubernetesDirect", "AwsLambda", "ECS", "Asg", "CustomDeployment", "Pdc", "SshWinRmAws"}, Reference: reference.InfrastructureTypes}
	InfraDeploymentKind = Kind{What: "deployment type", Code: "unsupported-deployment-type",
		Runs: []string{"Kubernetes", "NativeHelm", "AwsLambda", "ECS", "Asg", "CustomDeployment", "Ssh"}, Reference: reference.ServiceDefinitionTypes}
	ConnectorKind     = Kind{What: "connector type", Code: "unsupported-connector-type", Runs: []string{"K8sCluster", "Git", "Github", "Gitlab", "Bitbucket", "DockerRegistry", "HttpHelmRepo", "OciHelmRepo", "Aws", "Prometheus", "Jira", "ServiceNow", "Vault", "AwsSecretManager"}}
	TriggerSourceKind = Kind{What: "trigger source type", Code: "unsupported-trigger-type",
		Runs: []string{"Webhook", "Scheduled"}, Reference: reference.TriggerSourceTypes}
	WebhookKind = Kind{What: "webhook type", Code: "unsupported-trigger-type",
		Runs: []string{"Github", "Gitlab", "Bitbucket", "Custom"}, Reference: reference.WebhookTypes}
)

// GitCredentialKind is the kind of a Github, Gitlab or Bitbucket connector's HTTP credentials.
var GitCredentialKind = Kind{What: "Git HTTP credential type", Code: "unsupported-git-auth",
	Runs: []string{"UsernameToken", "UsernamePassword"}, Reference: []string{"Anonymous", "GithubApp", "OAuth", "PersonalAccessToken"},
	Hint: "Gantry authenticates to Git with a username and a token or password (`type: UsernameToken`), or an SSH key"}

// typed are the objects whose `spec` is shaped by their `type`: when Gantry does not run the
// type, the spec is left undecoded, so its reference fields are not reported as unknown.
var typed = map[reflect.Type]Kind{
	reflect.TypeFor[ServiceDefinition](): ServiceDefinitionKind,
	reflect.TypeFor[Manifest]():          ManifestKind,
	reflect.TypeFor[ManifestStore]():     ManifestStoreKind,
	reflect.TypeFor[ArtifactSource]():    ArtifactSourceKind,
	reflect.TypeFor[Infrastructure]():    InfrastructureKind,
	reflect.TypeFor[Connector]():         ConnectorKind,
	reflect.TypeFor[GitCredentials]():    GitCredentialKind,
	reflect.TypeFor[OciChartConfig]():    OciChartConfigKind,
}

// runsType checks the `type` of a typed object; false means its spec is not decoded.
func (d *Decoder) runsType(n *yaml.Node, t reflect.Type) bool {
	k, ok := typed[t]
	if !ok {
		return true
	}
	v := ValueAt(n, "type")
	if v == nil || v.Kind != yaml.ScalarNode {
		return true
	}
	return k.Check(d.Diags, d.Pos(v), v.Value)
}
