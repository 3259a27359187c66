package workflows

import (
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
)

// codebaseContext is <+codebase.*> (spec 22.3) as a pipeline starts: the build the run asks
// for, its values rendered (a trigger fills them with <+trigger.*>). The commit of a branch or
// tag build is known once a CI stage cloned it (codebaseCloned).
func codebaseContext(cb *plan.Codebase, root map[string]any) map[string]any {
	render := func(v string) string {
		if !expressions.Has(v) {
			return v
		}
		if out, err := expressions.RenderString(v, expressions.NewScope(root, "pipeline"), expressions.Options{}); err == nil {
			return out
		}
		return v
	}
	out := map[string]any{"repoUrl": cb.RepoURL, "build": map[string]any{"type": cb.BuildType},
		"branch": render(cb.Branch), "tag": render(cb.Tag), "prNumber": render(cb.PRNumber), "commitSha": render(cb.CommitSha)}
	// A webhook run builds the commit its event named (spec 22.3, C133).
	if ev, ok := root["trigger"].(map[string]any); ok && ev["type"] == "Webhook" {
		str := func(k string) string { v, _ := ev[k].(string); return v }
		if out["commitSha"] == "" {
			out["commitSha"] = str("commitSha")
		}
		out["prTitle"], out["sourceBranch"], out["targetBranch"], out["gitUserId"] = str("prTitle"), str("sourceBranch"), str("targetBranch"), str("gitUser")
		out["commitMessage"], out["state"] = str("commitMessage"), str("prState")
		if out["repoUrl"] == "" {
			out["repoUrl"] = str("repoUrl")
		}
	}
	setShortSha(out)
	return out
}

func setShortSha(cb map[string]any) {
	sha, _ := cb["commitSha"].(string)
	cb["shortCommitSha"] = sha[:min(len(sha), 7)]
}

// codebaseCloned records the commit a CI stage's codebase clone checked out.
func (s *stageRun) codebaseCloned(outputs map[string]any) {
	cb, ok := s.root["codebase"].(map[string]any)
	if !ok {
		return
	}
	// A pull request's commit is its head, as the event said, not the merge a clone built.
	if build, _ := cb["build"].(map[string]any); build["type"] == "PR" && cb["commitSha"] != "" {
		return
	}
	if sha, _ := outputs["commitSha"].(string); sha != "" {
		cb["commitSha"] = sha
		setShortSha(cb)
	}
}

// ciEnv are the built-in variables every step of a CI stage sees (spec 22.2): CI, the
// workspace, and Drone's names for the build, which plugins rely on.
func (s *stageRun) ciEnv(stepName string) map[string]string {
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	cb, _ := s.root["codebase"].(map[string]any)
	pipe, _ := s.root["pipeline"].(map[string]any)
	env := map[string]string{"CI": "true", "HARNESS_WORKSPACE": "/harness",
		"DRONE_STAGE_NAME": s.in.Stage.Name, "DRONE_STEP_NAME": stepName}
	if seq, ok := pipe["sequenceId"]; ok {
		env["DRONE_BUILD_NUMBER"] = expressions.ToString(seq)
	}
	if cb == nil {
		return env
	}
	repo := strings.TrimSuffix(str(cb, "repoUrl"), ".git")
	name := path.Base(repo)
	full := name
	if u, err := url.Parse(repo); err == nil && u.Path != "" {
		full = strings.TrimPrefix(u.Path, "/")
	}
	env["DRONE_REMOTE_URL"], env["DRONE_REPO"], env["DRONE_REPO_NAME"] = str(cb, "repoUrl"), full, name
	env["DRONE_BRANCH"], env["DRONE_COMMIT_BRANCH"] = str(cb, "branch"), str(cb, "branch")
	env["DRONE_COMMIT_SHA"], env["DRONE_COMMIT"] = str(cb, "commitSha"), str(cb, "commitSha")
	env["DRONE_TAG"], env["DRONE_PULL_REQUEST"] = str(cb, "tag"), str(cb, "prNumber")
	if n, err := strconv.Atoi(str(cb, "prNumber")); err == nil {
		env["DRONE_PULL_REQUEST"] = strconv.Itoa(n)
	}
	return env
}
