package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/gittest"
)

// A pull request's branch validated before it merges, as it is in Git (--connector) and as a
// checkout (--checkout): every pipeline with the templates of the tree, problems at their
// repository, commit, line and column.
func TestValidateARepositoryBranch(t *testing.T) {
	srv := gittest.Start(t)
	good := "pipeline:\n  name: r\n  identifier: r\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        template: {templateRef: say, versionLabel: v1}\n"
	tpl := "template:\n  name: say\n  identifier: say\n  versionLabel: v1\n  orgIdentifier: default\n  projectIdentifier: default\n  type: Stage\n  spec:\n    type: Custom\n    spec:\n      execution:\n        steps:\n          - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: echo hi}}}}\n"
	srv.NewRepo("app", map[string]string{".harness/release.yaml": good, ".harness/templates/say.yaml": tpl})
	commit := srv.Commit("app", "pr-7", map[string]string{".harness/broken.yaml": "pipeline:\n  name: b\n  identifier: b\n  stages:\n    - stage:\n        name: a\n       identifier: a\n"})
	dir := t.TempDir()
	conn := fmt.Sprintf("connector:\n  name: app\n  identifier: app_repo\n  type: Git\n  spec:\n    url: %s/app.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: app_token}\n", srv.HTTPURL, srv.Username)
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(conn), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(secrets.EnvName("app_token"), srv.Password)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, out, errs := run("validate", "--for-run", "--connector", "app_repo", "--branch", "pr-7", "--entities", dir)
	if code != ExitInvalid || !strings.Contains(out, "app@"+commit[:12]+":.harness/broken.yaml:7:8: invalid YAML") || !strings.Contains(out, "ok app@"+commit[:12]+":.harness/release.yaml") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := run("validate", "--connector", "app_repo", "--branch", "main", "--entities", dir, ".harness/release.yaml"); code != ExitOK {
		t.Errorf("main: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := run("validate", "--connector", "app_repo", "--branch", "gone", "--entities", dir); code != ExitUsage || !strings.Contains(errs, "branch gone") || strings.Contains(errs, srv.Password) {
		t.Errorf("a missing branch: exit %d %s", code, errs)
	}
}
