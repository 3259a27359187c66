package triggers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Event is one webhook delivery, normalised across providers.
type Event struct {
	Provider     string // Github, Gitlab, Bitbucket, Custom
	Type         string // PullRequest/MergeRequest, Push, ... (the trigger's event names)
	Action       string // Open, Close, Synchronize, ... ("" for pushes)
	DeliveryID   string // provider delivery id or the caller's idempotency key
	Headers      map[string]string
	Payload      any
	Raw          []byte
	Branch       string
	SourceBranch string
	TargetBranch string
	CommitSha    string
	BaseSha      string
	PRNumber     string
	PRTitle      string
	RepoURL      string
	RepoName     string
	Sender       string
	Tag          string
	ChangedFiles []string
	// CommitMessage is the pushed or pull request head commit's message, when the payload
	// says; State a pull request's state (open, closed, merged).
	CommitMessage string
	State         string
}

// Parse normalises a delivery of a provider from its headers and raw body.
func Parse(provider string, h http.Header, body []byte) (*Event, error) {
	ev := &Event{Provider: provider, Raw: body, Headers: map[string]string{}}
	for k, v := range h {
		ev.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if err := json.Unmarshal(body, &ev.Payload); err != nil {
		return nil, fmt.Errorf("payload is not JSON: %v", err)
	}
	p, _ := ev.Payload.(map[string]any)
	var err error
	switch provider {
	case "Github":
		err = parseGithub(ev, h, p)
	case "Gitlab":
		err = parseGitlab(ev, h, p)
	case "Bitbucket":
		err = parseBitbucket(ev, h, p)
	case "Custom":
		ev.Type = "Custom"
		ev.DeliveryID = h.Get("Idempotency-Key")
	default:
		return nil, fmt.Errorf("webhook provider %q is not supported", provider)
	}
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// parseGithub reads a GitHub push, pull_request or release delivery.
func parseGithub(ev *Event, h http.Header, p map[string]any) error {
	ev.DeliveryID = h.Get("X-GitHub-Delivery")
	switch h.Get("X-GitHub-Event") {
	case "push":
		ev.Type = "Push"
		parseRef(ev, str(p, "ref"))
		ev.CommitSha, ev.BaseSha = str(p, "after"), str(p, "before")
		ev.Sender = str(p, "sender", "login")
		ev.ChangedFiles = commitFiles(p["commits"])
		ev.CommitMessage = str(p, "head_commit", "message")
	case "pull_request":
		ev.Type = "PullRequest"
		ev.Action = githubAction(str(p, "action"))
		ev.SourceBranch, ev.TargetBranch = str(p, "pull_request", "head", "ref"), str(p, "pull_request", "base", "ref")
		ev.Branch = ev.SourceBranch
		ev.CommitSha, ev.BaseSha = str(p, "pull_request", "head", "sha"), str(p, "pull_request", "base", "sha")
		ev.PRNumber, ev.PRTitle = str(p, "pull_request", "number"), str(p, "pull_request", "title")
		ev.Sender = str(p, "sender", "login")
		ev.State = str(p, "pull_request", "state")
		if str(p, "pull_request", "merged") == "true" {
			ev.State = "merged"
		}
	case "release":
		ev.Type, ev.Action = "Release", githubAction(str(p, "action"))
		ev.Tag = str(p, "release", "tag_name")
		ev.Branch = str(p, "release", "target_commitish")
	default:
		return fmt.Errorf("GitHub event %q is not supported (push, pull_request, release)", h.Get("X-GitHub-Event"))
	}
	ev.RepoURL, ev.RepoName = str(p, "repository", "html_url"), str(p, "repository", "name")
	return nil
}

// parseGitlab reads a GitLab push, tag push or merge request delivery.
func parseGitlab(ev *Event, h http.Header, p map[string]any) error {
	ev.DeliveryID = h.Get("X-Gitlab-Event-UUID")
	switch h.Get("X-Gitlab-Event") {
	case "Push Hook", "Tag Push Hook":
		ev.Type = "Push"
		parseRef(ev, str(p, "ref"))
		ev.CommitSha, ev.BaseSha = str(p, "after"), str(p, "before")
		ev.Sender = str(p, "user_username")
		ev.ChangedFiles = commitFiles(p["commits"])
		if cs, ok := p["commits"].([]any); ok && len(cs) > 0 {
			if c, ok := cs[len(cs)-1].(map[string]any); ok {
				ev.CommitMessage = str(c, "message")
			}
		}
	case "Merge Request Hook":
		ev.Type = "MergeRequest"
		ev.Action = githubAction(str(p, "object_attributes", "action"))
		ev.SourceBranch, ev.TargetBranch = str(p, "object_attributes", "source_branch"), str(p, "object_attributes", "target_branch")
		ev.Branch = ev.SourceBranch
		ev.CommitSha = str(p, "object_attributes", "last_commit", "id")
		ev.PRNumber, ev.PRTitle = str(p, "object_attributes", "iid"), str(p, "object_attributes", "title")
		ev.Sender = str(p, "user", "username")
		ev.CommitMessage, ev.State = str(p, "object_attributes", "last_commit", "message"), str(p, "object_attributes", "state")
	default:
		return fmt.Errorf("GitLab event %q is not supported", h.Get("X-Gitlab-Event"))
	}
	ev.RepoURL, ev.RepoName = str(p, "project", "web_url"), str(p, "project", "name")
	return nil
}

// parseBitbucket reads a Bitbucket push or pull request delivery.
func parseBitbucket(ev *Event, h http.Header, p map[string]any) error {
	ev.DeliveryID = h.Get("X-Request-UUID")
	switch key := h.Get("X-Event-Key"); {
	case key == "repo:push":
		ev.Type = "Push"
		if ch, ok := first(p, "push", "changes"); ok {
			ev.Branch = str(ch, "new", "name")
			ev.TargetBranch = ev.Branch
			if str(ch, "new", "type") == "tag" {
				ev.Tag, ev.Branch, ev.TargetBranch = ev.Branch, "", ""
			}
			ev.CommitSha = str(ch, "new", "target", "hash")
			ev.CommitMessage = strings.TrimSpace(str(ch, "new", "target", "message"))
		}
	case strings.HasPrefix(key, "pullrequest:"):
		ev.Type = "PullRequest"
		ev.Action = map[string]string{"created": "Create", "updated": "Update", "fulfilled": "Merge", "rejected": "Decline"}[strings.TrimPrefix(key, "pullrequest:")]
		ev.SourceBranch, ev.TargetBranch = str(p, "pullrequest", "source", "branch", "name"), str(p, "pullrequest", "destination", "branch", "name")
		ev.Branch = ev.SourceBranch
		ev.CommitSha = str(p, "pullrequest", "source", "commit", "hash")
		ev.PRNumber, ev.PRTitle = str(p, "pullrequest", "id"), str(p, "pullrequest", "title")
		ev.State = strings.ToLower(str(p, "pullrequest", "state"))
	default:
		return fmt.Errorf("Bitbucket event %q is not supported", key)
	}
	ev.Sender = str(p, "actor", "nickname")
	ev.RepoURL, ev.RepoName = str(p, "repository", "links", "html", "href"), str(p, "repository", "name")
	return nil
}

// parseRef reads refs/heads/X (branch) or refs/tags/X (tag).
func parseRef(ev *Event, ref string) {
	if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		ev.Tag = t
		return
	}
	ev.Branch = strings.TrimPrefix(ref, "refs/heads/")
	ev.TargetBranch = ev.Branch
}

// githubAction maps provider actions (opened, synchronize, ...) to the trigger names.
func githubAction(a string) string {
	switch a {
	case "opened", "open":
		return "Open"
	case "closed", "close":
		return "Close"
	case "reopened", "reopen":
		return "Reopen"
	case "synchronize", "update":
		return "Synchronize"
	case "edited":
		return "Edit"
	case "labeled":
		return "Label"
	case "unlabeled":
		return "Unlabel"
	case "ready_for_review":
		return "ReadyForReview"
	case "merge":
		return "Merge"
	case "created":
		return "Create"
	case "deleted":
		return "Delete"
	case "published":
		return "Publish"
	}
	if a == "" {
		return ""
	}
	return strings.ToUpper(a[:1]) + a[1:]
}

func commitFiles(v any) []string {
	var out []string
	seen := map[string]bool{}
	list, _ := v.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		for _, k := range []string{"added", "modified", "removed"} {
			files, _ := m[k].([]any)
			for _, f := range files {
				if s, ok := f.(string); ok && !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func first(m map[string]any, path ...string) (map[string]any, bool) {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	l, _ := cur.([]any)
	if len(l) == 0 {
		return nil, false
	}
	f, ok := l[0].(map[string]any)
	return f, ok
}

// str reads a nested value as text ("" when absent); numbers print without a fraction.
func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	switch v := cur.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v))
		}
	}
	return fmt.Sprint(cur)
}

// Data is the <+trigger.*> and <+eventPayload> view of an event (spec 13.9).
func (ev *Event) Data() map[string]any {
	// Headers under their lower-case and canonical names; conditions match any case.
	headers := map[string]any{}
	for k, v := range ev.Headers {
		headers[k] = v
		headers[http.CanonicalHeaderKey(k)] = v
	}
	event := map[string]string{"PullRequest": "PR", "MergeRequest": "PR", "Push": "PUSH", "Release": "Release"}[ev.Type]
	typ := "Webhook"
	if ev.Provider == "Custom" {
		typ = "Custom"
	}
	return map[string]any{
		"type": typ, "event": event, "branch": ev.Branch, "sourceBranch": ev.SourceBranch, "targetBranch": ev.TargetBranch,
		"prNumber": ev.PRNumber, "prTitle": ev.PRTitle, "commitSha": ev.CommitSha, "baseCommitSha": ev.BaseSha,
		"repoUrl": ev.RepoURL, "gitUser": ev.Sender, "tag": ev.Tag, "commitMessage": ev.CommitMessage, "prState": ev.State,
		"header": headers, "payload": ev.Payload,
		"eventPayload": string(ev.Raw),
	}
}
