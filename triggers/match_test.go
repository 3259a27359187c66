package triggers

import (
	"net/http"
	"os"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
)

func trigger(t *testing.T, src string) *pipeline.Trigger {
	t.Helper()
	f, diags := pipeline.Parse("t.yaml", []byte(src))
	if diags.HasErrors() || f.Trigger == nil {
		t.Fatalf("%v", diags)
	}
	return f.Trigger
}

func event(t *testing.T, provider, file string, headers map[string]string) *Event {
	t.Helper()
	body, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	ev, err := Parse(provider, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

const githubPush = `trigger:
  name: main pushes
  identifier: main_push
  pipelineIdentifier: p
  source:
    type: Webhook
    spec:
      type: Github
      spec:
        type: Push
        spec:
          repoName: checkout-service
          payloadConditions:
            - {key: targetBranch, operator: Equals, value: main}
            - {key: changedFiles, operator: In, value: "services/checkout/.*, charts/checkout/.*"}
            - {key: <+trigger.payload.sender.login>, operator: NotIn, value: "dependabot\\[bot\\]"}
          headerConditions:
            - {key: "<+trigger.header['X-GitHub-Event']>", operator: Equals, value: push}
          jexlCondition: <+trigger.payload.repository.private> == false
`

func TestGitHubPush(t *testing.T) {
	tr := trigger(t, githubPush)
	ev := event(t, "Github", "github-push.json", map[string]string{"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1"})
	if v := Evaluate(tr, ev); !v.Match {
		t.Fatalf("push to main did not match: %+v", v)
	}
	d := ev.Data()
	if d["branch"] != "main" || d["commitSha"] != "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c" || d["gitUser"] != "octocat" || d["repoUrl"] != "https://github.com/acme/checkout-service" {
		t.Errorf("data %v", d)
	}
	ev.TargetBranch = "develop"
	if v := Evaluate(tr, ev); v.Match || v.Status != StatusNoPayload {
		t.Errorf("develop: %+v", v)
	}
	ev = event(t, "Github", "github-push.json", map[string]string{"X-GitHub-Event": "push"})
	ev.ChangedFiles = []string{"docs/x.md"}
	if v := Evaluate(tr, ev); v.Match || v.Status != StatusNoFilepath {
		t.Errorf("docs only: %+v", v)
	}
	ev = event(t, "Github", "github-pr.json", map[string]string{"X-GitHub-Event": "pull_request"})
	if v := Evaluate(tr, ev); v.Match || v.Status != StatusNoAction {
		t.Errorf("PR against a push trigger: %+v", v)
	}
}

func TestPullRequestsAcrossProviders(t *testing.T) {
	for _, c := range []struct {
		provider, event, file string
		headers               map[string]string
	}{
		{"Github", "PullRequest", "github-pr.json", map[string]string{"X-GitHub-Event": "pull_request"}},
		{"Gitlab", "MergeRequest", "gitlab-mr.json", map[string]string{"X-Gitlab-Event": "Merge Request Hook"}},
		{"Bitbucket", "PullRequest", "bitbucket-pr.json", map[string]string{"X-Event-Key": "pullrequest:created"}},
	} {
		tr := trigger(t, `trigger:
  name: prs
  identifier: prs
  pipelineIdentifier: p
  source:
    type: Webhook
    spec:
      type: `+c.provider+`
      spec:
        type: `+c.event+`
        spec:
          payloadConditions:
            - {key: sourceBranch, operator: Regex, value: feature/.*}
            - {key: targetBranch, operator: Equals, value: main}
`)
		ev := event(t, c.provider, c.file, c.headers)
		if v := Evaluate(tr, ev); !v.Match {
			t.Errorf("%s: %+v", c.provider, v)
		}
		if ev.SourceBranch != "feature/retries" || ev.PRNumber == "" || ev.CommitSha == "" {
			t.Errorf("%s: %+v", c.provider, ev)
		}
		// <+codebase.state> (spec 22.3): each provider's word for an open pull request.
		if want := map[string]string{"Github": "open", "Gitlab": "opened", "Bitbucket": "open"}[c.provider]; ev.State != want {
			t.Errorf("%s: state %q, want %q", c.provider, ev.State, want)
		}
	}
}

func TestPushAcrossProviders(t *testing.T) {
	for _, c := range []struct {
		provider, file string
		headers        map[string]string
	}{
		{"Gitlab", "gitlab-push.json", map[string]string{"X-Gitlab-Event": "Push Hook"}},
		{"Bitbucket", "bitbucket-push.json", map[string]string{"X-Event-Key": "repo:push"}},
	} {
		ev := event(t, c.provider, c.file, c.headers)
		if ev.Type != "Push" || ev.Branch != "main" || ev.CommitSha == "" || ev.RepoURL == "" {
			t.Errorf("%s: %+v", c.provider, ev)
		}
	}
}

func TestCustomAndDisabled(t *testing.T) {
	tr := trigger(t, `trigger:
  name: bot
  identifier: bot
  pipelineIdentifier: p
  source:
    type: Webhook
    spec:
      type: Custom
      spec:
        payloadConditions:
          - {key: <+trigger.payload.service>, operator: Equals, value: checkout}
        jexlCondition: <+trigger.payload.env> != "dev"
`)
	ev, err := Parse("Custom", http.Header{}, []byte(`{"service": "checkout", "env": "prod"}`))
	if err != nil {
		t.Fatal(err)
	}
	if v := Evaluate(tr, ev); !v.Match {
		t.Errorf("%+v", v)
	}
	ev, _ = Parse("Custom", http.Header{}, []byte(`{"service": "checkout", "env": "dev"}`))
	if v := Evaluate(tr, ev); v.Match || v.Status != StatusNoJexl {
		t.Errorf("dev: %+v", v)
	}
	tr.Enabled = "false"
	ev, _ = Parse("Custom", http.Header{}, []byte(`{"service": "checkout", "env": "prod"}`))
	if v := Evaluate(tr, ev); v.Match {
		t.Error("a disabled trigger fired")
	}
}
