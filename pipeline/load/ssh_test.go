package load_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

// sshFiles are an Ssh stage's files: a credential, an environment, a Pdc infrastructure,
// a service with a config file, and a pipeline with a Command step.
func sshFiles() map[string]string {
	return map[string]string{
		"secret.yaml":  "secret:\n  type: SSHKey\n  name: k\n  identifier: deploy_key\n  spec:\n    auth:\n      type: SSH\n      spec:\n        credentialType: KeyReference\n        spec: {userName: deploy, key: deploy_pem}\n    port: 2222\n",
		"env.yaml":     "environment:\n  name: s\n  identifier: staging\n  type: PreProduction\n",
		"infra.yaml":   "infrastructureDefinition:\n  name: h\n  identifier: hosts\n  environmentRef: staging\n  deploymentType: Ssh\n  type: Pdc\n  spec:\n    credentialsRef: deploy_key\n    hosts: [web-1, \"web-2:2200\"]\n    hostFilter: {type: All, spec: {}}\n",
		"service.yaml": "service:\n  name: s\n  identifier: shop\n  serviceDefinition:\n    type: Ssh\n    spec:\n      configFiles:\n        - configFile: {identifier: app, spec: {store: {type: Local, spec: {paths: [app.conf]}}}}\n",
		"app.conf":     "x=1\n",
		"pipeline.yaml": `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: d
        identifier: d
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment: {environmentRef: staging, infrastructureDefinitions: [{identifier: hosts}]}
          execution:
            steps:
              - step:
                  type: Command
                  name: c
                  identifier: c
                  timeout: 1m
                  strategy: {repeat: {items: <+stage.output.hosts>}}
                  spec:
                    onDelegate: false
                    commandUnits:
                      - {identifier: copy, name: copy, type: Copy, spec: {sourceType: Config, destinationPath: /opt/app}}
                      - {identifier: run, name: run, type: Script, spec: {shell: Bash, source: {type: Inline, spec: {script: echo}}}}
`,
	}
}

// An Ssh stage: its files check, resolve into hosts and a credential, and what Gantry does
// not run yet is unsupported at its line, never an error.
func TestSshDeploymentChecks(t *testing.T) {
	files := sshFiles
	r := loadIn(t, files(), "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	inf := r.Plan.Stages[0].Deploy.Infra
	if s := inf.Ssh; s == nil || len(s.Hosts) != 2 || s.Hosts[1] != "web-2:2200" || s.Credential.User != "deploy" || s.Credential.KeyRef != "deploy_pem" || s.Credential.Port != 2222 {
		t.Fatalf("ssh infrastructure %+v", inf.Ssh)
	}
	if cf := r.Plan.Stages[0].Deploy.Service.ConfigFiles; len(cf) != 1 || cf[0].Text != "x=1\n" {
		t.Errorf("config files %+v", cf)
	}
	// A WinRm stage and its Command steps: valid reference YAML Gantry does not run.
	fs := files()
	fs["pipeline.yaml"] = strings.Replace(fs["pipeline.yaml"], "deploymentType: Ssh", "deploymentType: WinRm", 1)
	fs["service.yaml"] = strings.Replace(fs["service.yaml"], "type: Ssh", "type: WinRm", 1)
	fs["infra.yaml"] = strings.Replace(fs["infra.yaml"], "deploymentType: Ssh", "deploymentType: WinRm", 1)
	r = loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true})
	if len(codesOf(r.Diags, diag.Error)) > 0 || len(codes(r.Diags, diag.Unsupported, "step-stage-type")) != 1 || len(codes(r.Diags, diag.Unsupported, "unsupported-deployment-type")) == 0 {
		t.Errorf("a WinRm stage:\n%s", r.Diags.Render(r.Sources))
	}
	// A HostNames filter keeps the hosts it names.
	fs = files()
	fs["infra.yaml"] = strings.Replace(fs["infra.yaml"], "hostFilter: {type: All, spec: {}}", "hostFilter: {type: HostNames, spec: {value: [web-2]}}", 1)
	if r := loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true}); !r.OK() || fmt.Sprint(r.Plan.Stages[0].Deploy.Infra.Ssh.Only) != "[web-2]" {
		t.Errorf("HostNames: %+v\n%s", r.Plan, r.Diags.Render(r.Sources))
	}
	// The artifact copied and downloaded, a tailed file, output variables: all run.
	fs = files()
	fs["pipeline.yaml"] = strings.Replace(fs["pipeline.yaml"], "sourceType: Config", "sourceType: Artifact", 1)
	fs["pipeline.yaml"] = strings.Replace(fs["pipeline.yaml"], "shell: Bash,", "shell: Bash, tailFiles: [{tailFile: app.log, tailPattern: 'started on port [0-9]+'}],", 1)
	fs["pipeline.yaml"] = strings.Replace(fs["pipeline.yaml"], "                    commandUnits:\n", "                    outputVariables: [{name: port, type: String, value: PORT}]\n                    commandUnits:\n"+
		"                      - {identifier: get, name: get, type: DownloadArtifact, spec: {destinationPath: /opt/app}}\n", 1)
	if r := loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true}); !r.OK() || len(r.Diags) > 0 {
		t.Errorf("artifact units, tailFiles and outputVariables:\n%s", r.Diags.Render(r.Sources))
	}
	cases := []struct {
		name, file, old, new string
		sev                  diag.Severity
		want                 string
	}{
		{"tail pattern", "pipeline.yaml", "shell: Bash,", "shell: Bash, tailFiles: [{tailFile: app.log, tailPattern: 'started ('}],", diag.Error, "not a regular expression"},
		{"tail file", "pipeline.yaml", "shell: Bash,", "shell: Bash, tailFiles: [{tailPattern: started}],", diag.Error, "needs `tailFile`"},
		{"download", "pipeline.yaml", "type: Copy, spec: {sourceType: Config, destinationPath: /opt/app}", "type: DownloadArtifact, spec: {}", diag.Error, "DownloadArtifact needs `destinationPath`"},
		{"powershell", "pipeline.yaml", "shell: Bash", "shell: PowerShell", diag.Unsupported, "WinRM"},
		{"on delegate", "pipeline.yaml", "onDelegate: false", "onDelegate: true", diag.Unsupported, "on the delegate"},
		{"kerberos", "secret.yaml", "type: SSH\n", "type: Kerberos\n", diag.Unsupported, "Kerberos"},
		{"secret file", "secret.yaml", "type: SSHKey", "type: SecretFile", diag.Unsupported, "secret type SecretFile"},
		{"no key", "secret.yaml", "key: deploy_pem", "keyPath: ''", diag.Error, "key"},
		{"host groups", "infra.yaml", "hosts: [web-1, \"web-2:2200\"]", "hostGroups: []", diag.Unsupported, "hostGroups"},
		{"host attributes", "infra.yaml", "hostFilter: {type: All, spec: {}}", "hostFilter: {type: HostAttributes, spec: {value: {region: eu}}}", diag.Unsupported, "hostFilter HostAttributes"},
		{"host names expression", "infra.yaml", "hostFilter: {type: All, spec: {}}", "hostFilter: {type: HostNames, spec: {value: <+input>}}", diag.Unsupported, "list of the hosts"},
		{"file store config", "service.yaml", "type: Local, spec: {paths: [app.conf]}", "type: Harness, spec: {files: [/app.conf]}", diag.Unsupported, "a Harness store is not read yet"},
		{"credential missing", "infra.yaml", "credentialsRef: deploy_key", "credentialsRef: other_key", diag.Error, "other_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := files()
			if !strings.Contains(fs[c.file], c.old) {
				t.Fatalf("%s no longer holds %q", c.file, c.old)
			}
			fs[c.file] = strings.Replace(fs[c.file], c.old, c.new, 1)
			r := loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true})
			found := false
			for _, d := range r.Diags {
				if d.Severity == c.sev && strings.Contains(d.Message, c.want) && d.Pos.Line > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("want a %v saying %q:\n%s", c.sev, c.want, r.Diags.Render(r.Sources))
			}
			if c.sev == diag.Unsupported && len(codesOf(r.Diags, diag.Error)) > 0 {
				t.Errorf("valid reference YAML reported invalid:\n%s", r.Diags.Render(r.Sources))
			}
		})
	}
}

// codesOf lists the diagnostics of one severity.
func codesOf(l diag.List, sev diag.Severity) diag.List {
	var out diag.List
	for _, d := range l {
		if d.Severity == sev {
			out = append(out, d)
		}
	}
	return out
}

// A ShellScript meant for a target host needs the host and its credential (a missing secret is
// a warning for a plain validate, an error for a run); what it cannot do there is unsupported.
func TestShellScriptOnATargetHost(t *testing.T) {
	step := func(spec string) string {
		return customStage("", "              - step: {type: ShellScript, name: r, identifier: r, spec: {shell: Bash, onDelegate: false, "+spec+", source: {type: Inline, spec: {script: hostname}}}}\n")
	}
	r := loadIn(t, map[string]string{"pipeline.yaml": step("executionTarget: {host: web-1, connectorRef: k}")}, "pipeline.yaml", load.Options{})
	if d := codes(r.Diags, diag.Warning, "missing-entity"); len(d) != 1 || !strings.Contains(d[0].Message, `secret "k"`) {
		t.Errorf("want a warning for the missing credential:\n%s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, map[string]string{"pipeline.yaml": step("executionTarget: {host: web-1, connectorRef: k}")}, "pipeline.yaml", load.Options{ForRun: true})
	if r.OK() {
		t.Error("a run without the credential loads")
	}
	r = loadIn(t, map[string]string{"pipeline.yaml": step("executionTarget: {connectorRef: k}")}, "pipeline.yaml", load.Options{})
	if d := codes(r.Diags, diag.Unsupported, "unsupported-field"); len(d) != 1 || !strings.Contains(d[0].Message, "without `host`") {
		t.Errorf("want the missing host unsupported:\n%s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, map[string]string{"pipeline.yaml": step("executionTarget: {host: h, connectorRef: k}, outputVariables: [{name: o, type: String, value: o}]")}, "pipeline.yaml", load.Options{})
	if d := codesOf(r.Diags, diag.Unsupported); len(d) != 0 {
		t.Errorf("outputVariables on a target host are captured:\n%s", r.Diags.Render(r.Sources))
	}
}

// An SshWinRmAws infrastructure resolves into its connector, filter and credential; what
// Gantry cannot run of it is unsupported at its line.
func TestSshWinRmAwsChecks(t *testing.T) {
	files := func() map[string]string {
		return map[string]string{
			"secret.yaml":  "secret:\n  type: SSHKey\n  name: k\n  identifier: deploy_key\n  spec:\n    auth:\n      type: SSH\n      spec:\n        credentialType: KeyReference\n        spec: {userName: deploy, key: deploy_pem}\n",
			"aws.yaml":     "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential: {type: InheritFromDelegate, spec: {}}\n",
			"env.yaml":     "environment:\n  name: s\n  identifier: staging\n  type: PreProduction\n",
			"infra.yaml":   "infrastructureDefinition:\n  name: h\n  identifier: hosts\n  environmentRef: staging\n  deploymentType: Ssh\n  type: SshWinRmAws\n  spec:\n    connectorRef: aws\n    credentialsRef: deploy_key\n    region: eu-west-1\n    hostConnectionType: PublicIP\n    awsInstanceFilter: {tags: {app: shop}, vpcs: [vpc-1]}\n",
			"service.yaml": "service:\n  name: s\n  identifier: shop\n  serviceDefinition:\n    type: Ssh\n    spec: {}\n",
		}
	}
	fs := files()
	fs["pipeline.yaml"] = `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: d
        identifier: d
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment: {environmentRef: staging, infrastructureDefinitions: [{identifier: hosts}]}
          execution:
            steps:
              - step: {type: Command, name: c, identifier: c, timeout: 1m, strategy: {repeat: {items: <+stage.output.hosts>}}, spec: {onDelegate: false, commandUnits: [{identifier: run, name: run, type: Script, spec: {shell: Bash, source: {type: Inline, spec: {script: echo}}}}]}}
`
	pipelineYAML := fs["pipeline.yaml"]
	r := loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	s := r.Plan.Stages[0].Deploy.Infra.Ssh
	if s == nil || s.Aws == nil || s.Aws.Region != "eu-west-1" || !s.Aws.PublicIP || s.Aws.Tags["app"] != "shop" || fmt.Sprint(s.Aws.Vpcs) != "[vpc-1]" || s.Aws.Connector.ID != "aws" || s.Credential.KeyRef != "deploy_pem" {
		t.Fatalf("resolved %+v", s)
	}
	for _, c := range []struct {
		old, new string
		sev      diag.Severity
		want     string
	}{
		{"hostConnectionType: PublicIP", "hostConnectionType: Elastic", diag.Error, "host connection type"},
		{"    region: eu-west-1\n", "", diag.Error, "region"},
		{"    hostConnectionType: PublicIP\n", "    hostConnectionType: PublicIP\n    asgName: shop-asg\n", diag.Unsupported, "asgName"},
		{"tags: {app: shop}", "tags: <+input>", diag.Unsupported, "tags as one value"},
	} {
		fs := files()
		fs["pipeline.yaml"] = pipelineYAML
		fs["infra.yaml"] = strings.Replace(fs["infra.yaml"], c.old, c.new, 1)
		r := loadIn(t, fs, "pipeline.yaml", load.Options{ForRun: true})
		found := false
		for _, d := range r.Diags {
			found = found || d.Severity == c.sev && strings.Contains(d.Message, c.want)
		}
		if !found {
			t.Errorf("%q: want a %v saying %q:\n%s", c.new, c.sev, c.want, r.Diags.Render(r.Sources))
		}
	}
}

// A CustomArtifact source: a version, or a versionRegex among the versions its script lists
// (resolved into the plan); what is broken is an error at its line, what Gantry does not run
// unsupported.
func TestCustomArtifactSourceChecks(t *testing.T) {
	const source = `      artifacts:
        primary:
          primaryArtifactRef: pkg
          sources:
            - identifier: pkg
              type: CustomArtifact
              spec:
                versionRegex: '2\..*'
                inputs: [{name: BASE, type: String, value: https://repo}]
                scripts:
                  fetchAllArtifacts:
                    artifactsArrayPath: items
                    versionPath: version
                    attributes: [{name: url, type: String, value: link}]
                    spec: {shell: Bash, source: {type: Inline, spec: {script: list-builds > $HARNESS_ARTIFACT_RESULT_PATH}}}
`
	withSource := func(src string) map[string]string {
		fs := sshFiles()
		fs["service.yaml"] = strings.Replace(fs["service.yaml"], "    spec:\n", "    spec:\n"+src, 1)
		return fs
	}
	r := loadIn(t, withSource(source), "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	c := r.Plan.Stages[0].Deploy.Service.Artifact.Custom
	if c == nil || c.VersionRegex != `2\..*` || c.ArrayPath != "items" || c.VersionPath != "version" || len(c.Attributes) != 1 || c.Attributes[0].JSONPath != "link" ||
		len(c.Inputs) != 1 || c.Inputs[0].Value != "https://repo" || !strings.Contains(c.Script, "list-builds") {
		t.Fatalf("resolved %+v", c)
	}
	for _, k := range []struct {
		old, new string
		sev      diag.Severity
		want     string
	}{
		{"                versionRegex: '2\\..*'\n", "", diag.Error, "needs `version` or `versionRegex`"},
		{"'2\\..*'", "'2\\..*('", diag.Error, "not a regular expression"},
		{"                    versionPath: version\n", "", diag.Error, "versionPath"},
		{"shell: Bash", "shell: PowerShell", diag.Unsupported, "PowerShell artifact script"},
		{"source: {type: Inline, spec: {script: list-builds > $HARNESS_ARTIFACT_RESULT_PATH}}", "source: {type: Harness, spec: {file: /list.sh}}", diag.Unsupported, "a Harness artifact script"},
	} {
		src := strings.Replace(source, k.old, k.new, 1)
		if src == source {
			t.Fatalf("%q is not in the source", k.old)
		}
		r := loadIn(t, withSource(src), "pipeline.yaml", load.Options{ForRun: true})
		found := false
		for _, d := range r.Diags {
			found = found || d.Severity == k.sev && strings.Contains(d.Message, k.want) && d.Pos.Line > 0
		}
		if !found {
			t.Errorf("%q: want a %v saying %q:\n%s", k.new, k.sev, k.want, r.Diags.Render(r.Sources))
		}
	}
	// Without a script, a versionRegex has nothing to pick from.
	r = loadIn(t, withSource("      artifacts: {primary: {primaryArtifactRef: pkg, sources: [{identifier: pkg, type: CustomArtifact, spec: {versionRegex: '2.*'}}]}}\n"), "pipeline.yaml", load.Options{ForRun: true})
	if d := codes(r.Diags, diag.Error, "missing-field"); len(d) != 1 || !strings.Contains(d[0].Message, "scripts.fetchAllArtifacts") {
		t.Errorf("versionRegex without a script:\n%s", r.Diags.Render(r.Sources))
	}
}
