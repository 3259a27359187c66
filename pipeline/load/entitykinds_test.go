package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

// Entity files and triggers of kinds the reference defines but Gantry does not run are
// `unsupported` with a code naming the kind, and their type-shaped specs are not reported as
// unknown keys; made-up kinds stay errors; reference fields Gantry ignores are warnings.
func TestEntityAndTriggerKinds(t *testing.T) {
	const helmService = `service:
  name: api
  identifier: api
  serviceDefinition:
    type: Kubernetes
    spec:
      manifests:
        - manifest:
            identifier: chart
            type: HelmChart
            spec:
              store:
                type: OciHelmChart
                spec: {config: {type: ECR, spec: {connectorRef: aws, region: us-east-1}}, basePath: charts}
              chartName: api
              chartVersion: 1.4.0
              helmVersion: V3
`
	const localService = `service:
  name: web
  identifier: web
  serviceDefinition:
    type: Kubernetes
    spec:
      manifests:
        - manifest:
            identifier: m
            type: K8sManifest
            spec:
              store:
                type: %s
                spec: {connectorRef: gh, gitFetchType: Branch, paths: [k8s], repoName: web, branch: main}
              optionalValuesYaml: false
      artifacts:
        primary:
          primaryArtifactRef: img
          sources:
            - identifier: img
              type: DockerRegistry
              spec: {connectorRef: docker, imagePath: library/nginx, tag: "1.27", digest: ""}
`
	const cron = `trigger:
  name: nightly
  identifier: nightly
  pipelineIdentifier: p
  source:
    type: Scheduled
    spec:
      type: Cron
      spec: {expression: "0 2 * * *", timezone: %s}
`
	const webhook = `trigger:
  name: t
  identifier: t
  pipelineIdentifier: p
  source:
    type: Webhook
    spec:
      type: %s
      spec:
        type: %s
        spec: {connectorRef: gh, repoName: r, actions: []}
`
	cases := []struct {
		name, src string
		sev       diag.Severity // the worst verdict
		code      string        // a diagnostic that must be present with that severity
		absent    string        // a code that must not appear
	}{
		{"helm chart from a chart repository", helmService, diag.Unsupported, "unsupported-manifest-store", "unknown-key"},
		{"kustomize plugins", strings.Replace(strings.Replace(strings.Replace(localService, "%s", "Git", 1), "type: K8sManifest", "type: Kustomize", 1),
			"optionalValuesYaml: false", "pluginPath: plugins", 1), diag.Unsupported, "unsupported-field", "unknown-key"},
		{"kustomize patches without a kustomization", strings.Replace(strings.Replace(localService, "%s", "Git", 1), "type: K8sManifest", "type: KustomizePatches", 1),
			diag.Warning, "manifest-ignored", "unsupported-manifest-type"},
		{"Artifactory file artifact", "service:\n  name: a\n  identifier: a\n  serviceDefinition:\n    type: Ssh\n    spec:\n      artifacts:\n        primary:\n          primaryArtifactRef: war\n          sources:\n            - identifier: war\n              type: ArtifactoryRegistry\n              spec: {connectorRef: af, artifactDirectory: /, artifactPath: app.war, repository: apps, repositoryFormat: generic}\n",
			diag.Unsupported, "unsupported-artifact-type", "missing-field"},
		{"Gcs store", strings.Replace(localService, "%s", "Gcs", 1), diag.Unsupported, "unsupported-manifest-store", "unknown-key"},
		{"git store without its connector", strings.Replace(localService, "%s", "GitLab", 1), diag.Warning, "missing-entity", "unknown-key"},
		{"git store without a branch", strings.Replace(strings.Replace(localService, "%s", "Git", 1), ", branch: main", "", 1), diag.Error, "missing-field", ""},
		{"made-up store", strings.Replace(localService, "%s", "Gitt", 1), diag.Error, "enum", ""},
		{"reference fields of a manifest and an artifact", strings.Replace(strings.Replace(localService, "%s", "Local", 1),
			"{connectorRef: gh, gitFetchType: Branch, paths: [k8s], repoName: web, branch: main}", "{paths: [k8s]}", 1),
			diag.Warning, "reference-field-ignored", ""},
		{"Serverless service", "service:\n  name: a\n  identifier: a\n  serviceDefinition:\n    type: ServerlessAwsLambda\n    spec: {manifests: [], taskFoo: 1}\n",
			diag.Unsupported, "unsupported-deployment-type", "unknown-key"},
		{"made-up service type", "service:\n  name: a\n  identifier: a\n  serviceDefinition:\n    type: Kubernetess\n    spec: {}\n",
			diag.Error, "enum", ""},
		{"GKE infrastructure", "infrastructureDefinition:\n  name: k\n  identifier: k\n  environmentRef: prod\n  deploymentType: Kubernetes\n  type: KubernetesGcp\n  spec: {connectorRef: gcp, cluster: c1, namespace: default, releaseName: r}\n",
			diag.Unsupported, "unsupported-infrastructure-type", "unknown-key"},
		{"Serverless infrastructure deployment type", "infrastructureDefinition:\n  name: k\n  identifier: k\n  environmentRef: prod\n  deploymentType: ServerlessAwsLambda\n  type: KubernetesDirect\n  spec: {connectorRef: k8s, namespace: default}\n",
			diag.Unsupported, "unsupported-deployment-type", ""},
		{"environment overrides", "environment:\n  name: prod\n  identifier: prod\n  type: Production\n  overrides: {manifests: []}\n",
			diag.Warning, "reference-field-ignored", ""},
		{"AzureRepo connector", "connector:\n  name: az\n  identifier: az\n  type: AzureRepo\n  spec: {url: https://dev.azure.com/acme, type: Account, authentication: {type: Http}}\n",
			diag.Unsupported, "unsupported-connector-type", "unknown-key"},
		{"Github connector", "connector:\n  name: gh\n  identifier: gh\n  type: Github\n  spec: {url: https://github.com/acme, type: Account, validationRepo: app, authentication: {type: Http, spec: {type: UsernameToken, spec: {username: bot, tokenRef: gh_pat}}}, apiAccess: {type: Token, spec: {tokenRef: gh_pat}}}\n",
			diag.Warning, "reference-field-ignored", ""},
		{"Github connector with API access through an app", "connector:\n  name: gh\n  identifier: gh\n  type: Github\n  spec: {url: https://github.com/acme, type: Account, authentication: {type: Http, spec: {type: UsernameToken, spec: {username: bot, tokenRef: gh_pat}}}, apiAccess: {type: GithubApp, spec: {installationId: \"1\", applicationId: \"2\", privateKeyRef: gh_key}}}\n",
			diag.Warning, "not-implemented", "unknown-key"},
		{"Gitlab API access of Bitbucket's kind", "connector:\n  name: gl\n  identifier: gl\n  type: Gitlab\n  spec: {url: https://gitlab.com/acme, type: Account, authentication: {type: Http, spec: {type: UsernameToken, spec: {username: bot, tokenRef: pat}}}, apiAccess: {type: UsernameToken, spec: {username: bot, tokenRef: pat}}}\n",
			diag.Error, "enum", ""},
		{"Bitbucket API access without a user", "connector:\n  name: bb\n  identifier: bb\n  type: Bitbucket\n  spec: {url: https://bitbucket.org/acme, type: Account, authentication: {type: Http, spec: {type: UsernameToken, spec: {username: bot, tokenRef: pat}}}, apiAccess: {type: UsernameToken, spec: {tokenRef: pat}}}\n",
			diag.Error, "missing-field", ""},
		{"Github app auth", "connector:\n  name: gh\n  identifier: gh\n  type: Github\n  spec: {url: https://github.com/acme, type: Account, authentication: {type: Http, spec: {type: GithubApp, spec: {installationId: \"1\"}}}}\n",
			diag.Unsupported, "unsupported-git-auth", ""},
		{"Git connector without a password", "connector:\n  name: g\n  identifier: g\n  type: Git\n  spec: {url: https://git.example.com/app.git, connectionType: Repo, type: Http, spec: {username: bot}}\n",
			diag.Error, "missing-field", ""},
		{"Aws connector with keys and a cross-account role", awsConnector("type: ManualConfig\n      spec: {accessKey: AKIAEXAMPLE, secretKeyRef: aws_secret}\n      crossAccountAccess: {crossAccountRoleArn: \"arn:aws:iam::1:role/r\", externalId: x}\n      region: eu-west-1"),
			diag.Warning, "", "unknown-key"},
		{"Aws connector without its secret key", awsConnector("type: ManualConfig\n      spec: {accessKey: AKIAEXAMPLE}"), diag.Error, "missing-field", ""},
		{"Aws connector with OIDC", awsConnector("type: OidcAuthentication\n      spec: {iamRoleArn: \"arn:aws:iam::1:role/r\"}"), diag.Unsupported, "unsupported-aws-credential", "unknown-key"},
		{"Aws connector of the worker with keys", awsConnector("type: InheritFromDelegate\n      spec: {secretKeyRef: s}"), diag.Error, "credential", ""},
		{"Aws connector through a proxy", strings.Replace(awsConnector("type: Irsa"), "executeOnDelegate: true", "proxy: true", 1), diag.Warning, "reference-field-ignored", ""},
		{"made-up Aws credential", awsConnector("type: Manual"), diag.Error, "enum", ""},
		{"AwsLambda infrastructure without a region", "infrastructureDefinition:\n  name: l\n  identifier: l\n  environmentRef: prod\n  deploymentType: AwsLambda\n  type: AwsLambda\n  spec: {connectorRef: aws}\n",
			diag.Error, "missing-field", ""},
		{"ECS infrastructure without a cluster", "infrastructureDefinition:\n  name: e\n  identifier: e\n  environmentRef: prod\n  deploymentType: ECS\n  type: ECS\n  spec: {connectorRef: aws, region: eu-west-1}\n",
			diag.Error, "missing-field", "unknown-key"},
		{"Lambda alias definition without a function definition", "service:\n  name: a\n  identifier: a\n  serviceDefinition:\n    type: AwsLambda\n    spec:\n      manifests:\n        - manifest: {identifier: al, type: AwsLambdaFunctionAliasDefinition, spec: {store: {type: Local, spec: {paths: [a.json]}}}}\n",
			diag.Error, "manifest", "unsupported-manifest-type"},
		{"artifact trigger", "trigger:\n  name: t\n  identifier: t\n  pipelineIdentifier: p\n  source:\n    type: Artifact\n    spec: {type: DockerRegistry, spec: {connectorRef: d, imagePath: x, tag: <+trigger.artifact.build>}}\n",
			diag.Unsupported, "unsupported-trigger-type", ""},
		{"made-up trigger source", "trigger:\n  name: t\n  identifier: t\n  pipelineIdentifier: p\n  source:\n    type: Webhok\n    spec: {}\n",
			diag.Error, "enum", ""},
		{"AzureRepo webhook", strings.NewReplacer("%s", "AzureRepo").Replace(webhook), diag.Unsupported, "unsupported-trigger-type", ""},
		{"Github merge queue", strings.Replace(strings.Replace(webhook, "%s", "Github", 1), "%s", "MergeQueue", 1),
			diag.Unsupported, "unsupported-trigger-event", ""},
		{"Github push", strings.Replace(strings.Replace(webhook, "%s", "Github", 1), "%s", "Push", 1), diag.Warning, "", ""},
		{"cron with the schema's timezone", strings.Replace(cron, "%s", "Europe/Berlin", 1), diag.Warning, "", ""},
		{"cron with an unknown timezone", strings.Replace(cron, "%s", "Mars/Olympus", 1), diag.Error, "cron", ""},
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "k8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k8s", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := load.File(file, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			text := r.Diags.Render(r.Sources)
			rank := map[diag.Severity]int{diag.Warning: 0, diag.Unsupported: 1, diag.Error: 2}
			worst := diag.Warning
			for _, d := range r.Diags {
				if rank[d.Severity] > rank[worst] {
					worst = d.Severity
				}
			}
			if worst != c.sev {
				t.Errorf("worst verdict %v, want %v\n%s", worst, c.sev, text)
			}
			if c.code != "" && len(codes(r.Diags, c.sev, c.code)) == 0 {
				t.Errorf("no %v %s\n%s", c.sev, c.code, text)
			}
			for _, d := range r.Diags {
				if c.absent != "" && d.Code == c.absent {
					t.Errorf("unexpected %s: %s", c.absent, d.Message)
				}
			}
		})
	}
}

// awsConnector is an Aws connector file with the given credential body.
func awsConnector(credential string) string {
	return "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      " + credential + "\n    executeOnDelegate: true\n"
}
