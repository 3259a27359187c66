package e2e

import (
	"context"
	_ "embed"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// s3Pipeline deploys the web service and reports what the stage took from S3.
//
//go:embed testdata/pipelines/web_s3.yaml
var s3Pipeline string

// A service whose manifests and values live in an S3 bucket (a real S3-compatible server,
// signed with an Aws connector's keys from the secret resolver) and whose artifact is the
// newest object matching a pattern in it deploys to the cluster: the stage reads both at its
// service phase, publishes them as <+manifests.*> and <+artifact.*>, and records what it read.
// A wrong secret key fails the stage as an Authentication failure naming the bucket.
func TestK8sManifestsAndArtifactFromS3(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-s3")
	srv, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	if err := srv.Bucket(ctx, "deploy"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"manifests/configmap.yaml", "manifests/deployment.yaml", "manifests/service.yaml", "values.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "web", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), "<+artifact.image>", "nginx:1.27", 1)
		if err := srv.Put(ctx, "deploy", "web/"+name, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	// Two builds; the second is newer and is the one a filePathRegex deploys.
	for _, key := range []string{"builds/web-1.0.zip", "builds/web-1.1.zip", "builds/other-9.9.zip"} {
		if err := srv.Put(ctx, "deploy", key, []byte("zip of "+key)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // S3 times have one-second resolution
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv(secrets.EnvName("aws_secret_key"), s3test.SecretKey)
	writeFile(t, filepath.Join(dir, "aws-connector.yaml"), `connector:
  name: AWS
  identifier: aws
  type: Aws
  spec:
    credential:
      type: ManualConfig
      spec: {accessKey: `+s3test.AccessKey+`, secretKeyRef: aws_secret_key}
      region: `+s3test.Region+`
    executeOnDelegate: true
`)
	rewriteService(t, dir, `              store:
                type: Local
                spec:
                  paths: [web/manifests]
              valuesPaths: [web/values.yaml]
`, `              store:
                type: S3
                spec:
                  connectorRef: aws
                  bucketName: deploy
                  region: `+s3test.Region+`
                  paths: [web/manifests]
              valuesPaths: [web/values.yaml]
`)
	rewriteService(t, dir, `              type: DockerRegistry
              spec:
                imagePath: library/nginx
                tag: <+pipeline.variables.tag>
`, `              type: AmazonS3
              spec:
                connectorRef: aws
                bucketName: deploy
                filePathRegex: builds/web-.*\.zip
`)
	file := filepath.Join(dir, "s3.yaml")
	writeFile(t, file, s3Pipeline)
	r, err := load.File(file, load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	_, res := runPlan(t, env.starter, r.Plan)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	if d := deploymentOf(t, cs, "e2e-s3-dev", "web"); *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("deployment from the bucket's manifests: %d replicas, image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	if got := res.Tree.Find("deploy_dev.report").Outputs["outputVariables"].(map[string]any)["took"]; got != "deploy|builds/web-1.1.zip|S3|deploy" {
		t.Errorf("<+artifact.*> and <+manifests.*>: %v", got)
	}
	stage := res.Tree.Find("deploy_dev")
	notes := strings.Join(stage.Notes, "\n")
	if !strings.HasPrefix(stage.Manifests["web"], "sha256:") || !strings.Contains(notes, "manifest web: s3://deploy web/manifests") ||
		!strings.Contains(notes, "artifact nginx: s3://deploy/builds/web-1.1.zip") {
		t.Errorf("stage records %v, notes:\n%s", stage.Manifests, notes)
	}

	t.Setenv(secrets.EnvName("aws_secret_key"), "not-the-key")
	_, res = runPlan(t, env.starter, r.Plan)
	stage = res.Tree.Find("deploy_dev")
	if stage.Status == status.Succeeded || stage.Failure == nil || stage.Failure.Category != "Authentication" ||
		!strings.Contains(stage.Failure.Message, "s3://deploy") || strings.Contains(stage.Failure.Message, "not-the-key") {
		t.Fatalf("a wrong key: %s %+v", stage.Status, stage.Failure)
	}
}
