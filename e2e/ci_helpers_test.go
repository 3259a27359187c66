package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/triggers"
)

// ciHookSecret signs the GitHub deliveries of the CI webhook tests.
const ciHookSecret = "hush"

// webhookAPI writes files (name → text) into a folder and serves Gantry's API with it as the
// pipelines folder, starting on the node's worker; the webhook secret ci_hook_secret is set.
func webhookAPI(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	t.Setenv(secrets.EnvName("ci_hook_secret"), ciHookSecret)
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	api := httptest.NewServer(server.New(server.Options{Starter: node.starter, IdentityFile: filepath.Join(dir, "none.yaml"),
		PipelinesDir: dir, Secrets: &secrets.Store{}, Events: &triggers.EventLog{Path: filepath.Join(t.TempDir(), "events.jsonl")}}))
	t.Cleanup(api.Close)
	return api
}

// githubTrigger is a trigger file starting pipeline on GitHub events of one type (Push,
// PullRequest) of repository app, with the extra spec lines given (indented for it).
func githubTrigger(id, pipeline, event, extra string) string {
	return `trigger:
  name: ` + id + `
  identifier: ` + id + `
  pipelineIdentifier: ` + pipeline + `
  encryptedWebhookSecretIdentifier: ci_hook_secret
  source:
    type: Webhook
    spec:
      type: Github
      spec:
        type: ` + event + `
        spec:
          repoName: app
` + extra
}

// deliverGithub sends a signed GitHub delivery to the API and returns the executions it
// started, failing unless it was accepted with want of them.
func deliverGithub(t *testing.T, api *httptest.Server, event, delivery string, payload []byte, want int) []string {
	t.Helper()
	req, _ := http.NewRequest("POST", api.URL+"/api/v1/webhooks/github", bytes.NewReader(payload))
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", sign(payload, ciHookSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			ExecutionID string `json:"executionId"`
		} `json:"results"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	var ids []string
	for _, r := range out.Results {
		if r.ExecutionID != "" {
			ids = append(ids, r.ExecutionID)
		}
	}
	if resp.StatusCode != http.StatusAccepted || len(ids) != want {
		t.Fatalf("delivery %s: %d, executions %v, want %d", delivery, resp.StatusCode, ids, want)
	}
	return ids
}

// workerProcess returns a function that starts a `gantry worker` process of binary bin on the
// queue, with the node's helper image, its state in dir; the caller stops what it starts.
func workerProcess(t *testing.T, n *nodetest.Node, bin, queue, dir string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--address", env.srv.Address, "--task-queue", queue, "--data-dir", filepath.Join(dir, "data"),
			"--helper-image", n.Image(nodetest.Helper))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = testproc.DieWithTest() // a test that times out takes its workers with it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
}

// ciS3 starts an S3 server (versitygw) with bucket cache for a test, sets the secret of the
// Aws connector that reaches it, and returns the server and that connector's file (aws).
func ciS3(t testing.TB) (*s3test.Server, string) {
	t.Helper()
	s3, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s3.Stop)
	if err := s3.Bucket(context.Background(), "cache"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(secrets.EnvName("ci_aws_secret"), s3test.SecretKey)
	return s3, "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: " +
		s3test.AccessKey + ", secretKeyRef: ci_aws_secret}\n      region: " + s3test.Region + "\n    executeOnDelegate: true\n"
}

// ciStageOpts shape a CI stage of these tests.
type ciStageOpts struct {
	Clone       bool   // cloneCodebase
	HostNetwork bool   // the pod on the node's network, where BuildKit reaches the loopback registry
	Spec        string // further lines of the stage's spec (serviceDependencies, ...), indented for it
}

// ciStage is the head of a CI stage (a YAML list item under stages) on the node, in namespace
// default, up to its execution's steps: the step items follow, indented for them.
func ciStage(id string, o ciStageOpts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "    - stage:\n        name: %s\n        identifier: %s\n        type: CI\n        spec:\n", id, id)
	if o.Clone {
		b.WriteString("          cloneCodebase: true\n")
	}
	b.WriteString("          infrastructure:\n            type: KubernetesDirect\n            spec:\n" +
		"              connectorRef: node\n              namespace: default\n              initTimeout: 2m\n")
	if o.HostNetwork {
		b.WriteString("              podSpecOverlay: \"spec: {hostNetwork: true}\"\n")
	}
	b.WriteString(o.Spec)
	b.WriteString("          execution:\n            steps:\n")
	return b.String()
}
