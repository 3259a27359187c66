package e2e

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/internal/sshtest"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

var knownHostsMu sync.Mutex

// trustHosts adds the servers' keys to the worker's known hosts.
func trustHosts(t testing.TB, srvs ...*sshtest.Server) {
	t.Helper()
	knownHostsMu.Lock()
	defer knownHostsMu.Unlock()
	f, err := os.OpenFile(env.knownHosts, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range srvs {
		fmt.Fprintln(f, s.KnownHosts)
	}
}

// An Ssh stage deploys to the three hosts of a Pdc infrastructure (three real sshd on
// loopback, their keys known), two at a time: a Command step in a loop over
// <+stage.output.hosts> copies the service's config file (its expressions rendered) and runs a
// script in a working directory with the step's variables, as the SSH credential's user. A host
// that is down fails its iteration with a Connectivity failure; the others deploy.
func TestSshDeploysToHosts(t *testing.T) {
	hosts := []*sshtest.Server{sshtest.Start(t), sshtest.Start(t), sshtest.Start(t)}
	trustHosts(t, hosts...)
	t.Setenv(secrets.EnvName("deploy_pem"), hosts[0].ClientKey)
	// Every server trusts the same client key: the first one's.
	for _, h := range hosts[1:] {
		if err := os.WriteFile(filepath.Join(filepath.Dir(h.Home), "authorized", h.KeyUser), []byte(authorizedOf(t, hosts[0])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, target := t.TempDir(), t.TempDir()
	var list []string
	for _, h := range hosts {
		list = append(list, h.Addr)
	}
	writeFile(t, filepath.Join(dir, "secret.yaml"), fmt.Sprintf(`secret:
  type: SSHKey
  name: Deploy key
  identifier: deploy_key
  spec:
    auth:
      type: SSH
      spec:
        credentialType: KeyReference
        spec: {userName: %s, key: deploy_pem}
    port: 22
`, hosts[0].KeyUser))
	writeFile(t, filepath.Join(dir, "environment.yaml"), "environment:\n  name: Staging\n  identifier: staging\n  type: PreProduction\n")
	writeFile(t, filepath.Join(dir, "infrastructure.yaml"), fmt.Sprintf(`infrastructureDefinition:
  name: Shop hosts
  identifier: shop_hosts
  environmentRef: staging
  deploymentType: Ssh
  type: Pdc
  spec:
    credentialsRef: deploy_key
    hosts: [%s]
    hostFilter: {type: All, spec: {}}
`, strings.Join(list, ", ")))
	writeFile(t, filepath.Join(dir, "config", "app.properties"), "version=<+serviceVariables.version>\n")
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: Shop
  identifier: shop
  serviceDefinition:
    type: Ssh
    spec:
      configFiles:
        - configFile: {identifier: app, spec: {store: {type: Local, spec: {paths: [config/app.properties]}}}}
      variables:
        - {name: version, type: String, value: "2.0"}
`)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), fmt.Sprintf(`pipeline:
  name: Shop over SSH
  identifier: shop_ssh
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment:
            environmentRef: staging
            infrastructureDefinitions: [{identifier: shop_hosts}]
          execution:
            steps:
              - step:
                  type: Command
                  name: Deploy
                  identifier: deploy
                  timeout: 1m
                  strategy:
                    repeat:
                      items: <+stage.output.hosts>
                      maxConcurrency: 2
                  spec:
                    onDelegate: false
                    environmentVariables:
                      - {name: RELEASE, type: String, value: <+serviceVariables.version>}
                    commandUnits:
                      - identifier: copy
                        name: Copy config
                        type: Copy
                        spec: {sourceType: Config, destinationPath: %[1]s/<+instance.hostName>/conf}
                      - identifier: start
                        name: Start
                        type: Script
                        spec:
                          shell: Bash
                          workingDirectory: %[1]s/<+instance.hostName>
                          source:
                            type: Inline
                            spec:
                              script: |
                                echo "release $RELEASE on <+instance.hostName> in $(pwd)" > deployed.txt
                                cat conf/app.properties
`, target))
	run := func() (string, *workflows.PipelineResult) {
		t.Helper()
		exec, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml")))
		return exec.ID, res
	}
	id, res := run()
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy.deploy_0": status.Succeeded, "deploy.deploy_1": status.Succeeded, "deploy.deploy_2": status.Succeeded})
	for i, h := range hosts {
		b, err := os.ReadFile(filepath.Join(target, h.Addr, "deployed.txt"))
		if want := fmt.Sprintf("release 2.0 on %s in %s", h.Addr, filepath.Join(target, h.Addr)); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("host %d: %q, %v; want %q", i, b, err, want)
		}
		if log := readLog(t, id, fmt.Sprintf("deploy.deploy_%d", i)); !strings.Contains(log, "version=2.0") || !strings.Contains(log, "on host "+h.Addr) {
			t.Errorf("host %d's log:\n%s", i, log)
		}
	}

	hosts[1].Stop()
	_, res = run()
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy.deploy_0": status.Succeeded, "deploy.deploy_1": status.Failed, "deploy.deploy_2": status.Succeeded})
	if f := res.Tree.Find("deploy.deploy_1").Failure; f == nil || f.Category != "Connectivity" || !strings.Contains(f.Message, hosts[1].Addr) {
		t.Errorf("the down host's failure: %+v", f)
	}
}

// authorizedOf is the authorized_keys line of a server's client key.
func authorizedOf(t testing.TB, s *sshtest.Server) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(s.Home), "authorized", s.KeyUser))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A ShellScript with onDelegate: false runs on its executionTarget's host over SSH, as the SSH
// credential it names, in its working directory; a host whose key the worker does not know
// is refused (Authentication) and nothing runs there.
func TestShellScriptOnTargetHost(t *testing.T) {
	known, unknown := sshtest.Start(t), sshtest.Start(t)
	trustHosts(t, known)
	t.Setenv(secrets.EnvName("target_pem"), known.ClientKey)
	if err := os.WriteFile(filepath.Join(filepath.Dir(unknown.Home), "authorized", unknown.KeyUser), []byte(authorizedOf(t, known)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, work := t.TempDir(), filepath.Join(t.TempDir(), "app")
	writeFile(t, filepath.Join(dir, "secret.yaml"), fmt.Sprintf(`secret:
  type: SSHKey
  name: Target key
  identifier: target_key
  spec:
    auth:
      type: SSH
      spec:
        credentialType: KeyReference
        spec: {userName: %s, key: target_pem}
`, known.KeyUser))
	src := func(host string) string {
		return fmt.Sprintf(`pipeline:
  name: On target
  identifier: on_target
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: remote
                  identifier: remote
                  timeout: 1m
                  spec:
                    shell: Bash
                    onDelegate: false
                    executionTarget: {host: "%s", connectorRef: target_key, workingDirectory: %s}
                    environmentVariables: [{name: WHO, type: String, value: pipeline}]
                    source: {type: Inline, spec: {script: 'echo "ran by $WHO in $(pwd)" | tee out.txt'}}
`, host, work)
	}
	run := func(host string) (string, *workflows.PipelineResult) {
		t.Helper()
		writeFile(t, filepath.Join(dir, "pipeline.yaml"), src(host))
		exec, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml")))
		return exec.ID, res
	}
	id, res := run(known.Addr)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.remote": status.Succeeded})
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "ran by pipeline in "+work {
		t.Errorf("on the host: %q, %v", b, err)
	}
	if log := readLog(t, id, "s.remote"); !strings.Contains(log, "on host "+known.Addr) || !strings.Contains(log, "ran by pipeline") {
		t.Errorf("log:\n%s", log)
	}
	_ = os.Remove(filepath.Join(work, "out.txt"))
	_, res = run(unknown.Addr)
	if f := res.Tree.Find("s.remote").Failure; f == nil || f.Category != "Authentication" || !strings.Contains(f.Message, "not among the known hosts") {
		t.Errorf("unknown host: %+v", f)
	}
	if _, err := os.Stat(filepath.Join(work, "out.txt")); err == nil {
		t.Error("the script ran on a host whose key is unknown")
	}
}

// sshHosts starts n sshd hosts that trust one client key and writes the SSH credential, the
// environment and a Pdc infrastructure listing them in dir.
func sshHosts(t testing.TB, dir string, n int) []*sshtest.Server {
	t.Helper()
	hosts := make([]*sshtest.Server, n)
	var list []string
	for i := range hosts {
		hosts[i] = sshtest.Start(t)
		list = append(list, hosts[i].Addr)
	}
	sshCredential(t, dir, 0, hosts...)
	writeFile(t, filepath.Join(dir, "infrastructure.yaml"), fmt.Sprintf(`infrastructureDefinition:
  name: Shop hosts
  identifier: shop_hosts
  environmentRef: prod
  deploymentType: Ssh
  type: Pdc
  spec:
    credentialsRef: deploy_key
    hosts: [%s]
`, strings.Join(list, ", ")))
	return hosts
}

// sshCredential makes every host trust the first one's client key (the secret deploy_pem)
// and the worker know their host keys, and writes the SSH credential (port 0: none) and the
// environment prod in dir.
func sshCredential(t testing.TB, dir string, port int, hosts ...*sshtest.Server) {
	t.Helper()
	for _, h := range hosts[1:] {
		if err := os.WriteFile(filepath.Join(filepath.Dir(h.Home), "authorized", h.KeyUser), []byte(authorizedOf(t, hosts[0])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trustHosts(t, hosts...)
	t.Setenv(secrets.EnvName("deploy_pem"), hosts[0].ClientKey)
	portLine := ""
	if port != 0 {
		portLine = fmt.Sprintf("    port: %d\n", port)
	}
	writeFile(t, filepath.Join(dir, "secret.yaml"), fmt.Sprintf(`secret:
  type: SSHKey
  name: Deploy key
  identifier: deploy_key
  spec:
    auth:
      type: SSH
      spec:
        credentialType: KeyReference
        spec: {userName: %s, key: deploy_pem}
%s`, hosts[0].KeyUser, portLine))
	writeFile(t, filepath.Join(dir, "environment.yaml"), "environment:\n  name: Production\n  identifier: prod\n  type: Production\n")
}

// buildsBucket starts a real S3-compatible server holding a bucket "builds" with objects, the
// worker's S3 endpoint, and its secret key as the secret keySecret.
func buildsBucket(t *testing.T, keySecret string, objects map[string]string) {
	t.Helper()
	srv, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	if err := srv.Bucket(ctx, "builds"); err != nil {
		t.Fatal(err)
	}
	for key, text := range objects {
		if err := srv.Put(ctx, "builds", key, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv(secrets.EnvName(keySecret), s3test.SecretKey)
}

// A rolling deployment of an S3 artifact to three sshd hosts in two phases (a step group
// over partitions of two hosts, one partition at a time): each host gets the artifact copied
// by the worker and downloaded by itself (a presigned URL, never in the log), starts the
// release, and the Script unit waits for the tailed log's "started" line; the port the script
// set is the step's output variable. The next release (which removes older releases) fails
// its check: the stage's rollback copies the artifact the hosts had before back, on every
// host, and switches to it.
func TestSshRollingDeploymentRollsBackArtifact(t *testing.T) {
	buildsBucket(t, "aws_key", map[string]string{"shop/shop-1.0.tgz": "shop 1.0\n", "shop/shop-1.1.tgz": "shop 1.1\n"})
	dir, target := t.TempDir(), t.TempDir()
	hosts := sshHosts(t, dir, 3)
	writeFile(t, filepath.Join(dir, "aws.yaml"), "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: "+s3test.AccessKey+", secretKeyRef: aws_key}\n      region: "+s3test.Region+"\n")
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: Shop
  identifier: shop
  serviceDefinition:
    type: Ssh
    spec:
      artifacts:
        primary:
          primaryArtifactRef: tgz
          sources:
            - identifier: tgz
              type: AmazonS3
              spec: {connectorRef: aws, bucketName: builds, filePath: shop/shop-<+pipeline.variables.version>.tgz}
`)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), fmt.Sprintf(`pipeline:
  name: Shop rolling
  identifier: shop_rolling
  variables:
    - {name: version, type: String, value: <+input>}
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: shop_hosts}]}
          execution:
            steps:
              - stepGroup:
                  name: Rollout
                  identifier: rollout
                  strategy: {repeat: {items: <+stage.output.hosts>, partitionSize: 2, maxConcurrency: 1}}
                  steps:
                    - step:
                        type: Command
                        name: Deploy
                        identifier: deploy
                        timeout: 1m
                        strategy: {repeat: {items: <+repeat.partition>}}
                        spec:
                          onDelegate: false
                          outputVariables: [{name: port, type: String, value: PORT}]
                          commandUnits:
                          - {identifier: copy, name: Copy, type: Copy, spec: {sourceType: Artifact, destinationPath: %[1]s/<+instance.hostName>/releases}}
                          - {identifier: get, name: Download, type: DownloadArtifact, spec: {destinationPath: %[1]s/<+instance.hostName>/downloads}}
                          - identifier: start
                            name: Start
                            type: Script
                            spec:
                              shell: Bash
                              workingDirectory: %[1]s/<+instance.hostName>
                              tailFiles: [{tailFile: app.log, tailPattern: 'started .* on port [0-9]+'}]
                              source:
                                type: Inline
                                spec:
                                  script: |
                                    ln -sfn "releases/shop-<+pipeline.variables.version>.tgz" current
                                    find releases -type f ! -name "shop-<+pipeline.variables.version>.tgz" -delete
                                    echo "starting before: should not match" >> app.log.old
                                    (sleep 1; echo "$(cat current) started on <+instance.hostName> on port 8080" >> app.log) &
                                    PORT=8080
              - step:
                  type: ShellScript
                  name: Check
                  identifier: check
                  timeout: 1m
                  spec:
                    shell: Bash
                    onDelegate: true
                    source: {type: Inline, spec: {script: 'echo "port <+execution.steps.rollout_0.steps.deploy_1.output.outputVariables.port>"; test "<+pipeline.variables.version>" != 1.1 || { echo "1.1 is broken"; exit 1; }'}}
            rollbackSteps:
              - step:
                  type: Command
                  name: Restore
                  identifier: restore
                  timeout: 1m
                  strategy: {repeat: {items: <+stage.output.hosts>}}
                  spec:
                    onDelegate: false
                    commandUnits:
                      - {identifier: copy, name: Copy, type: Copy, spec: {sourceType: Artifact, destinationPath: %[1]s/<+instance.hostName>/releases}}
                      - identifier: switch
                        name: Switch
                        type: Script
                        spec:
                          shell: Bash
                          workingDirectory: %[1]s/<+instance.hostName>
                          source: {type: Inline, spec: {script: 'ln -sfn "releases/$(basename <+rollbackArtifact.filePath>)" current'}}
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: StageRollback}}
`, target))
	run := func(version string) (string, *workflows.PipelineResult) {
		t.Helper()
		exec, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml"), "pipeline.variables.version="+version))
		if *updateHistories { // an Ssh stage that records its artifact, and one rolling back to it
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
		}
		return exec.ID, res
	}
	current := func(h *sshtest.Server) string {
		b, _ := os.ReadFile(filepath.Join(target, h.Addr, "current"))
		return strings.TrimSpace(string(b))
	}

	id, res := run("1.0")
	if res.Status != status.Succeeded {
		t.Fatalf("1.0: %s\n%s", res.Status, dumpTree(res.Tree))
	}
	phases := [][]string{{"deploy.rollout_0.deploy_0", "deploy.rollout_0.deploy_1"}, {"deploy.rollout_1.deploy_0"}}
	for _, p := range phases[0] {
		n := res.Tree.Find(p)
		if n == nil || n.Status != status.Succeeded {
			t.Fatalf("phase 1 node %s: %+v\n%s", p, n, dumpTree(res.Tree))
		}
		if second := res.Tree.Find(phases[1][0]); second == nil || second.StartedAt == nil || n.EndedAt == nil || second.StartedAt.Before(*n.EndedAt) {
			t.Errorf("the second phase started before %s ended", p)
		}
		if got := n.Outputs["outputVariables"]; fmt.Sprint(got) != "map[port:8080]" {
			t.Errorf("%s outputs: %v", p, n.Outputs)
		}
	}
	for i, h := range hosts {
		if got := current(h); got != "shop 1.0" {
			t.Errorf("host %d runs %q after 1.0", i, got)
		}
		if b, err := os.ReadFile(filepath.Join(target, h.Addr, "downloads", "shop-1.0.tgz")); err != nil || string(b) != "shop 1.0\n" {
			t.Errorf("host %d downloaded %q, %v", i, b, err)
		}
	}
	log := readLog(t, id, "deploy.rollout_1.deploy_0")
	for _, want := range []string{"copied s3://builds/shop/shop-1.0.tgz", "downloaded s3://builds/shop/shop-1.0.tgz", "[app.log] shop 1.0 started on " + hosts[2].Addr, "appeared"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	// No credential reaches history: the S3 key, the hosts' private key, a presigned URL.
	hist := rawHistory(t, id, id+"/deploy")
	for name, secret := range map[string]string{"the S3 secret key": s3test.SecretKey, "the SSH private key": privateKeyLine(hosts[0].ClientKey), "a presigned URL": "X-Amz-Signature"} {
		if bytes.Contains(hist, []byte(secret)) {
			t.Errorf("%s is in the execution's history", name)
		}
	}
	if log := readLog(t, id, "deploy.check"); !strings.Contains(log, "port 8080") {
		t.Errorf("the output variable read by a later step:\n%s", log)
	}
	if strings.Contains(log, "X-Amz-Signature") || strings.Contains(log, "should not match") {
		t.Errorf("the log shows the presigned URL or an earlier line:\n%s", log)
	}

	_, res = run("1.1")
	if res.Status != status.Failed {
		t.Fatalf("1.1: %s\n%s", res.Status, dumpTree(res.Tree))
	}
	for i, h := range hosts {
		if got := current(h); got != "shop 1.0" {
			t.Errorf("host %d runs %q after the rollback of 1.1", i, got)
		}
		if n := res.Tree.Find(fmt.Sprintf("deploy.rollbackSteps.restore_%d", i)); n == nil || n.Status != status.Succeeded {
			t.Errorf("restore on host %d: %+v", i, n)
		}
	}
}

// dumpTree lists a tree's nodes, their statuses and failures, for a test's message.
func dumpTree(n *workflows.Node) string {
	var b strings.Builder
	var walk func(n *workflows.Node)
	walk = func(n *workflows.Node) {
		fmt.Fprintf(&b, "%s %s", n.Path, n.Status)
		if n.Failure != nil {
			fmt.Fprintf(&b, " (%s: %s)", n.Failure.Category, n.Failure.Message)
		}
		b.WriteString("\n")
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// sshService writes an Ssh service with one primary artifact source (YAML flow mapping) and a
// pipeline deploying it to every host with units (YAML flow sequences, %[1]s the target
// folder), on queue's workers when the starter says so.
func sshPipeline(t testing.TB, dir, source, units string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: Shop
  identifier: shop
  serviceDefinition:
    type: Ssh
    spec:
      artifacts:
        primary:
          primaryArtifactRef: main
          sources:
            - `+source+"\n")
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, `pipeline:
  name: Shop artifact
  identifier: shop_artifact
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: shop_hosts}]}
          execution:
            steps:
              - step:
                  type: Command
                  name: Deploy
                  identifier: deploy
                  timeout: 1m
                  strategy: {repeat: {items: <+stage.output.hosts>}}
                  spec:
                    onDelegate: false
                    commandUnits:
`+units)
	return file
}

// An image artifact is copied to a host as a `docker load` archive of the image the stage
// resolved (by digest, with the registry connector's credentials); a CustomArtifact whose
// version is a URL is copied by the worker and downloaded by the host.
func TestSshCopiesImageAndCustomArtifacts(t *testing.T) {
	dir, target := t.TempDir(), t.TempDir()
	hosts := sshHosts(t, dir, 1)
	reg := registrytest.Start(t)
	reg.Push(t, "team/shop", "1.4.2")
	t.Setenv(secrets.EnvName("registry_token"), registrytest.Password)
	writeFile(t, filepath.Join(dir, "registry.yaml"), fmt.Sprintf("connector:\n  name: Registry\n  identifier: registry\n  type: DockerRegistry\n  spec:\n    dockerRegistryUrl: %s\n    providerType: Other\n    auth:\n      type: UsernamePassword\n      spec: {username: %s, passwordRef: registry_token}\n", reg.URL, registrytest.Username))
	copyTo := fmt.Sprintf("                      - {identifier: copy, name: Copy, type: Copy, spec: {sourceType: Artifact, destinationPath: %s/<+instance.hostName>/releases}}\n", target)
	file := sshPipeline(t, dir, "{identifier: main, type: DockerRegistry, spec: {connectorRef: registry, imagePath: team/shop, tag: 1.4.2}}", copyTo)
	_, res := runPlan(t, env.starter, loadRun(t, file))
	if res.Status != status.Succeeded {
		t.Fatalf("image: %s\n%s", res.Status, dumpTree(res.Tree))
	}
	archive := filepath.Join(target, hosts[0].Addr, "releases", "shop_1.4.2.tar")
	tag, err := name.NewTag(reg.Host+"/team/shop:1.4.2", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("the copied archive: %v", err)
	}
	pushed, err := remote.Image(tag, remote.WithAuth(&authn.Basic{Username: registrytest.Username, Password: registrytest.Password}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := img.ConfigName()
	want, _ := pushed.ConfigName()
	if got != want {
		t.Errorf("the archive holds image config %s, the registry %s", got, want)
	}

	pkg := []byte(strings.Repeat("shop 2.0\n", 1000))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pkg/shop-2.0.tgz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pkg)
	}))
	defer web.Close()
	file = sshPipeline(t, dir, "{identifier: main, type: CustomArtifact, spec: {version: "+web.URL+"/pkg/shop-2.0.tgz}}",
		copyTo+fmt.Sprintf("                      - {identifier: get, name: Download, type: DownloadArtifact, spec: {destinationPath: %s/<+instance.hostName>/downloads}}\n", target))
	_, res = runPlan(t, env.starter, loadRun(t, file))
	if res.Status != status.Succeeded {
		t.Fatalf("custom: %s\n%s", res.Status, dumpTree(res.Tree))
	}
	for _, sub := range []string{"releases", "downloads"} {
		if b, err := os.ReadFile(filepath.Join(target, hosts[0].Addr, sub, "shop-2.0.tgz")); err != nil || !bytes.Equal(b, pkg) {
			t.Errorf("%s: %d bytes, %v", sub, len(b), err)
		}
	}

	// Versions listed by the source's script: the highest matching 2.x, fetched from its url.
	for _, sub := range []string{"releases", "downloads"} {
		if err := os.RemoveAll(filepath.Join(target, hosts[0].Addr, sub)); err != nil {
			t.Fatal(err)
		}
	}
	listing := `printf '{"items": [{"version": "1.9", "link": "%s/pkg/shop-1.9.tgz"}, {"version": "2.0", "link": "%s/pkg/shop-2.0.tgz"}, {"version": "3.0-rc1", "link": "x"}]}' "$BASE" "$BASE" > "$HARNESS_ARTIFACT_RESULT_PATH"`
	file = sshPipeline(t, dir, "{identifier: main, type: CustomArtifact, spec: {versionRegex: '[12]\\..*', inputs: [{name: BASE, type: String, value: '"+web.URL+"'}], "+
		"scripts: {fetchAllArtifacts: {artifactsArrayPath: items, versionPath: version, attributes: [{name: url, type: String, value: link}], spec: {shell: Bash, source: {type: Inline, spec: {script: "+strconv.Quote(listing)+"}}}}}}}",
		copyTo+fmt.Sprintf("                      - {identifier: get, name: Download, type: DownloadArtifact, spec: {destinationPath: %s/<+instance.hostName>/downloads}}\n", target))
	_, res = runPlan(t, env.starter, loadRun(t, file))
	if res.Status != status.Succeeded {
		t.Fatalf("listed: %s\n%s", res.Status, dumpTree(res.Tree))
	}
	for _, sub := range []string{"releases", "downloads"} {
		if b, err := os.ReadFile(filepath.Join(target, hosts[0].Addr, sub, "shop-2.0.tgz")); err != nil || !bytes.Equal(b, pkg) {
			t.Errorf("listed, %s: %d bytes, %v", sub, len(b), err)
		}
	}
	if notes := strings.Join(res.Tree.Find("deploy").Notes, "\n"); !strings.Contains(notes, "artifact main: version 2.0 (of 3 listed)") {
		t.Errorf("the stage's notes:\n%s", notes)
	}
}

// A worker SIGKILLed while it copies an artifact to a host: the host keeps no half-written
// file where the artifact goes, and the step's next attempt, on another worker, copies the
// whole artifact.
func TestSshCopyWorkerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	dir, target := t.TempDir(), t.TempDir()
	sshHosts(t, dir, 1)
	pkg := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
			_, _ = w.Write(pkg)
			return
		default:
		}
		// The first attempt gets half the artifact, then nothing until its worker is gone.
		w.Header().Set("Content-Length", strconv.Itoa(len(pkg)))
		_, _ = w.Write(pkg[:len(pkg)/2])
		w.(http.Flusher).Flush()
		once.Do(func() { close(stalled) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer web.Close()
	defer once.Do(func() { close(stalled) })
	file := sshPipeline(t, dir, "{identifier: main, type: CustomArtifact, spec: {version: "+web.URL+"/shop-3.0.tgz}}",
		fmt.Sprintf("                      - {identifier: copy, name: Copy, type: Copy, spec: {sourceType: Artifact, destinationPath: %s/releases}}\n", target))
	const queue = "ssh-kill-test"
	startWorker := func() *exec.Cmd {
		return gantryWorker(t, bin, queue, filepath.Join(dir, "data"), "--ssh-known-hosts", env.knownHosts)
	}
	first := startWorker()
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	execution, err := s.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(target, "releases", "shop-3.0.tgz")
	part := filepath.Join(target, "releases", ".shop-3.0.tgz.gantry-part")
	select {
	case <-stalled:
	case <-ctx.Done():
		t.Fatal("the copy never started")
	}
	for st, err := os.Stat(part); err != nil || st.Size() == 0; st, err = os.Stat(part) {
		if ctx.Err() != nil {
			t.Fatal("nothing reached the host")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if _, err := os.Stat(dest); err == nil {
		t.Error("a half-copied artifact is where the artifact goes")
	}
	close(release)
	second := startWorker()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	res, err := s.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy.deploy_0": status.Succeeded})
	if b, err := os.ReadFile(dest); err != nil || !bytes.Equal(b, pkg) {
		t.Errorf("the artifact on the host: %d bytes, %v", len(b), err)
	}
	if n := res.Tree.Find("deploy.deploy_0"); n == nil || !strings.HasSuffix(n.Worker, "/"+strconv.Itoa(second.Process.Pid)) {
		t.Errorf("the copy was not finished by the second worker (pid %d): %+v", second.Process.Pid, n)
	}
}

// Config files kept in Git are fetched when the stage starts, at one commit for every host,
// their expressions rendered, and copied beside those kept with the service.
func TestSshConfigFilesFromGit(t *testing.T) {
	dir, target := t.TempDir(), t.TempDir()
	hosts := sshHosts(t, dir, 2)
	srv := gittest.Start(t)
	srv.NewRepo("conf", map[string]string{"shop/app.properties": "env=<+env.identifier>\n", "shop/logging.xml": "<logging/>\n", "other/x": "no\n"})
	t.Setenv(secrets.EnvName("git_token"), srv.Password)
	writeFile(t, filepath.Join(dir, "git.yaml"), fmt.Sprintf("connector:\n  name: Conf\n  identifier: conf\n  type: Git\n  spec:\n    url: %s/conf.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_token}\n", srv.HTTPURL, srv.Username))
	writeFile(t, filepath.Join(dir, "local.conf"), "local=1\n")
	file := sshPipeline(t, dir, "{identifier: main, type: CustomArtifact, spec: {version: '1.0'}}",
		fmt.Sprintf("                      - {identifier: conf, name: Config, type: Copy, spec: {sourceType: Config, destinationPath: %s/<+instance.hostName>}}\n", target))
	b, err := os.ReadFile(filepath.Join(dir, "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "service.yaml"), string(b)+`      configFiles:
        - configFile: {identifier: local, spec: {store: {type: Local, spec: {paths: [local.conf]}}}}
        - configFile: {identifier: shop, spec: {store: {type: Git, spec: {connectorRef: conf, gitFetchType: Branch, branch: main, paths: [shop]}}}}
`)
	_, res := runPlan(t, env.starter, loadRun(t, file))
	if res.Status != status.Succeeded {
		t.Fatalf("%s\n%s", res.Status, dumpTree(res.Tree))
	}
	for _, h := range hosts {
		for name, want := range map[string]string{"app.properties": "env=prod\n", "logging.xml": "<logging/>\n", "local.conf": "local=1\n"} {
			if b, err := os.ReadFile(filepath.Join(target, h.Addr, name)); err != nil || string(b) != want {
				t.Errorf("%s on %s: %q, %v", name, h.Addr, b, err)
			}
		}
		if _, err := os.Stat(filepath.Join(target, h.Addr, "x")); err == nil {
			t.Errorf("a file outside the store's paths was copied to %s", h.Addr)
		}
	}
}

// An SshWinRmAws infrastructure deploys to the running EC2 instances its filter selects (EC2
// is the protocol fake; the instances are sshd hosts on two loopback addresses sharing the
// credential's port): the tagged ones in the VPC, not a stopped one, another app's or another
// VPC's; `<+instance.host.*>` gives each iteration its instance.
func TestSshDeploysToAwsInstances(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_EC2", fake.URL)
	t.Setenv(secrets.EnvName("aws_key"), "fake-secret")
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []*sshtest.Server{sshtest.StartOn(t, "127.0.0.2", ports[0]), sshtest.StartOn(t, "127.0.0.3", ports[0])}
	dir, target := t.TempDir(), t.TempDir()
	sshCredential(t, dir, ports[0], hosts...)
	for _, in := range []awsfake.Instance{
		{ID: "i-02", PrivateIP: "127.0.0.3", VpcID: "vpc-1", Tags: map[string]string{"app": "shop", "Name": "shop-b"}},
		{ID: "i-01", PrivateIP: "127.0.0.2", PublicIP: "203.0.113.1", VpcID: "vpc-1", Tags: map[string]string{"app": "shop", "Name": "shop-a"}},
		{ID: "i-03", PrivateIP: "127.0.0.4", VpcID: "vpc-1", State: "stopped", Tags: map[string]string{"app": "shop"}},
		{ID: "i-04", PrivateIP: "127.0.0.5", VpcID: "vpc-1", Tags: map[string]string{"app": "billing"}},
		{ID: "i-05", PrivateIP: "127.0.0.6", VpcID: "vpc-2", Tags: map[string]string{"app": "shop"}},
	} {
		fake.AddInstance(in)
	}
	writeFile(t, filepath.Join(dir, "aws.yaml"), "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: AKIASHOP, secretKeyRef: aws_key}\n")
	writeFile(t, filepath.Join(dir, "infrastructure.yaml"), `infrastructureDefinition:
  name: Shop EC2
  identifier: shop_ec2
  environmentRef: prod
  deploymentType: Ssh
  type: SshWinRmAws
  spec:
    connectorRef: aws
    credentialsRef: deploy_key
    region: eu-west-1
    hostConnectionType: PrivateIP
    awsInstanceFilter: {tags: {app: <+pipeline.variables.app>}, vpcs: [vpc-1]}
`)
	writeFile(t, filepath.Join(dir, "service.yaml"), "service:\n  name: Shop\n  identifier: shop\n  serviceDefinition:\n    type: Ssh\n    spec: {}\n")
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), fmt.Sprintf(`pipeline:
  name: Shop on EC2
  identifier: shop_ec2
  variables:
    - {name: app, type: String, value: shop}
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Ssh
          service: {serviceRef: shop}
          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: shop_ec2}]}
          execution:
            steps:
              - step:
                  type: Command
                  name: Deploy
                  identifier: deploy
                  timeout: 1m
                  strategy: {repeat: {items: <+stage.output.hosts>}}
                  spec:
                    onDelegate: false
                    commandUnits:
                      - identifier: mark
                        name: Mark
                        type: Script
                        spec:
                          shell: Bash
                          source: {type: Inline, spec: {script: 'echo "<+instance.host.instanceId> <+instance.host.privateIp> <+instance.host.properties.Name>" > %s/<+instance.hostName>.txt'}}
`, target))
	_, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml")))
	if res.Status != status.Succeeded {
		t.Fatalf("%s\n%s", res.Status, dumpTree(res.Tree))
	}
	files, _ := filepath.Glob(filepath.Join(target, "*.txt"))
	if len(files) != 2 {
		t.Errorf("deployed to %v, want the two running shop instances of vpc-1", files)
	}
	for ip, want := range map[string]string{"127.0.0.2": "i-01 127.0.0.2 shop-a", "127.0.0.3": "i-02 127.0.0.3 shop-b"} {
		if b, err := os.ReadFile(filepath.Join(target, ip+".txt")); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("host %s: %q, %v; want %q", ip, b, err, want)
		}
	}
	for _, c := range fake.Calls() {
		if c.Service == "ec2" && (c.AccessKeyID != "AKIASHOP" || c.Params["Filter.2.Name"] != "tag:app" || c.Params["Filter.2.Value.1"] != "shop") {
			t.Errorf("EC2 call %+v", c)
		}
	}
}

//go:embed testdata/pipelines/ssh_basic.yaml
var sshBasicPipeline string

// The pipeline the reference generates for an Ssh stage's Basic strategy runs as it is:
// destinations and working directories under $HOME/<+service.name>/<+env.name> land in the
// login's home on each host, the artifact picked at run time from the service's sources.
func TestSshReferenceBasicStrategy(t *testing.T) {
	buildsBucket(t, "aws_secret", map[string]string{"todolist.war": "war\n"})
	dir := t.TempDir()
	hosts := sshHosts(t, dir, 2)
	name := fmt.Sprintf("gantry-e2e-todolist-%d", hosts[0].Port) // the hosts' home is the test user's
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(home, name)) })
	writeFile(t, filepath.Join(dir, "aws.yaml"), "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: "+s3test.AccessKey+", secretKeyRef: aws_secret}\n      region: "+s3test.Region+"\n    executeOnDelegate: true\n")
	writeFile(t, filepath.Join(dir, "config", "todolist.properties"), "env=<+env.name>\n")
	writeFile(t, filepath.Join(dir, "service.yaml"), `service:
  name: `+name+`
  identifier: todolist
  serviceDefinition:
    type: Ssh
    spec:
      artifacts:
        primary:
          primaryArtifactRef: <+input>
          sources:
            - {identifier: war, type: AmazonS3, spec: {connectorRef: aws, bucketName: builds, region: `+s3test.Region+`, filePath: todolist.war}}
      configFiles:
        - configFile: {identifier: props, spec: {store: {type: Local, spec: {paths: [config/todolist.properties]}}}}
`)
	text := strings.ReplaceAll(sshBasicPipeline, "environmentRef: dev", "environmentRef: prod")
	text = strings.ReplaceAll(text, "identifier: pdc", "identifier: shop_hosts")
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), text)
	_, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml")))
	if res.Status != status.Succeeded {
		t.Fatalf("%s\n%s", res.Status, dumpTree(res.Tree))
	}
	base := filepath.Join(home, name, "Production")
	got, err := os.ReadFile(filepath.Join(base, "deployed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"todolist.war", "todolist.properties", "runtime", "todolist.war on " + hosts[1].Addr} {
		if !strings.Contains(string(got), want) {
			t.Errorf("deployed.txt lacks %q:\n%s", want, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(base, "todolist.properties")); string(b) != "env=Production\n" {
		t.Errorf("the config file: %q", b)
	}
}

// privateKeyLine is a line from the middle of a PEM private key: text that only the key holds.
func privateKeyLine(pem string) string {
	lines := strings.Split(strings.TrimSpace(pem), "\n")
	return lines[len(lines)/2]
}
