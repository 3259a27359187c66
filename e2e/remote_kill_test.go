package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/gittest"
)

// A gantry server SIGKILLed while it writes a commit's files into its Git cache leaves half a
// tree behind, unmarked: after the restart, the next start of that commit fetches it again and
// runs, rather than trusting what the killed process left (whose pipeline file, written last,
// is missing). The commit is large enough that the kill lands while its files are written.
func TestServerKilledDuringAGitFetchFetchesAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gantry binary")
	}
	const fillers = 3000
	g := gittest.Start(t)
	files := map[string]string{"zz/release.yaml": quietPipeline}
	filler := strings.Repeat("# filler, read by no one\n", 80)
	for i := range fillers {
		files[fmt.Sprintf("aa/%04d/values.yaml", i)] = filler
	}
	commit := g.NewRepo("app", files)

	data, pipelines := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(pipelines, "app.yaml"), fmt.Sprintf("connector:\n  name: app_repo\n  identifier: app_repo\n  type: Git\n  spec:\n    url: %s/app.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_token}\n", g.HTTPURL, g.Username))
	writeFile(t, filepath.Join(data, "secrets.yaml"), "git_token: "+g.Password+"\n")
	entities := filepath.Join(pipelines, "registry", "remote.yaml")
	if err := os.MkdirAll(filepath.Dir(entities), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, entities, "remoteEntities:\n  - {kind: pipeline, identifier: release, connectorRef: app_repo, filePath: zz/release.yaml, branch: main}\n")
	ids := &identity.Directory{}
	token, _ := ids.AddUser("rel", "", []string{"release"})
	if err := ids.Save(filepath.Join(data, "users.yaml")); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	serve := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(env.gantry, "server", "--data-dir", data, "--listen", listen, "--ui-listen", "", "--pipelines", pipelines, "--remote-entities", entities)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var info struct{ PID int }
			if b, err := os.ReadFile(filepath.Join(data, "server.json")); err == nil && json.Unmarshal(b, &info) == nil && info.PID == cmd.Process.Pid {
				if c, err := net.Dial("tcp", listen); err == nil {
					c.Close()
					return cmd, &out
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server did not come up:\n%s", out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := func(timeout time.Duration) (int, map[string]any, error) {
		body, _ := json.Marshal(map[string]any{"pipeline": "release", "sets": []string{"pipeline.variables.greeting=again"}})
		req, _ := http.NewRequest("POST", "http://"+listen+"/api/v1/executions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, nil
	}

	server, out := serve()
	done := make(chan error, 1)
	go func() { _, _, err := start(5 * time.Minute); done <- err }()
	// The snapshot folder of the commit appears once the clone is done and its files are being
	// written; the kill comes then.
	var snap string
	deadline := time.Now().Add(3 * time.Minute)
	for snap == "" {
		if m, _ := filepath.Glob(filepath.Join(data, "git", "*", commit, "files", "aa")); len(m) > 0 {
			snap = filepath.Dir(filepath.Dir(m[0]))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never wrote the commit's files:\n%s", out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := server.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = server.Wait()
	if err := <-done; err == nil {
		t.Fatal("the start answered although its server was killed during the fetch")
	}
	if _, err := os.Stat(filepath.Join(snap, "files", "zz", "release.yaml")); err == nil {
		t.Fatal("the fetch finished before the kill: the commit is too small for this machine")
	}
	written, _ := filepath.Glob(filepath.Join(snap, "files", "aa", "*"))
	t.Logf("killed with %d of %d filler folders written", len(written), fillers)

	_, out = serve()
	code, res, err := start(5 * time.Minute)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("the start after the restart: %d %v %v\n%s", code, res, err, out.String())
	}
	if _, err := os.Stat(filepath.Join(snap, "files", "zz", "release.yaml")); err != nil {
		t.Errorf("the commit was not fetched again: %v", err)
	}
	id, _ := res["executionId"].(string)
	deadline = time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", "http://"+listen+"/api/v1/executions/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var tree struct {
			Status  string `json:"status"`
			Sources []struct {
				Commit string `json:"commitId"`
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&tree)
		resp.Body.Close()
		if strings.EqualFold(tree.Status, "Succeeded") {
			if len(tree.Sources) != 1 || tree.Sources[0].Commit != commit {
				t.Errorf("the run records %+v, want commit %s", tree.Sources, commit)
			}
			return
		}
		if time.Now().After(deadline) || strings.Contains(strings.ToLower(tree.Status), "fail") || strings.EqualFold(tree.Status, "Aborted") {
			t.Fatalf("the run after the restart is %s\n%s", tree.Status, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
