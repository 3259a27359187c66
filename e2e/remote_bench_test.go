package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/server"
)

// BenchmarkRemoteStart starts the same pipeline (a stage template linked at a gitBranch, an
// input set) through the API three ways, interleaved: from a file of the server's pipelines
// directory (the baseline), from Git with the commit already cached (warm: the branch's head
// is asked for, nothing fetched), and from Git just after a push (cold: the new commit is
// fetched). It reports the milliseconds of each start request and the Git server's requests,
// and, measured beside them, the round trip of asking Git for the two branch heads at once,
// which every start from Git pays (the reference, too, reads Git at every execution): warm
// less that round trip is Gantry's own cost of a start from Git.
func BenchmarkRemoteStart(b *testing.B) {
	rg := newRemoteRig(b)
	rg.register(b, remote.Entry{Kind: "pipeline", Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "main"}, 201)
	rg.register(b, remote.Entry{Kind: "inputSet", Identifier: "prod", ConnectorRef: "app_repo", FilePath: ".harness/prod.yaml", Branch: "main"}, 201)
	if err := os.MkdirAll(filepath.Join(rg.dir, "templates"), 0o755); err != nil {
		b.Fatal(err)
	}
	local := map[string]string{"release.yaml": remotePipeline("main", 0), "prod.input.yaml": "inputSet:\n  name: prod\n  identifier: prod\n  pipeline:\n    identifier: release\n    variables:\n      - {name: greeting, type: String, value: hello-prod}\n",
		filepath.Join("templates", "say.yaml"): sayStage}
	for name, text := range local {
		if err := os.WriteFile(filepath.Join(rg.dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	rg.git.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("main", 0)})
	var localMS, warmMS, coldMS, headsMS []float64
	conn := func(repo, branch string) *plan.GitStore {
		return &plan.GitStore{Type: "Git", Branch: branch, Connector: plan.GitConnector{ID: repo, Type: "Git", URL: rg.git.HTTPURL + "/" + repo + ".git",
			ConnectionType: "Repo", Username: rg.git.Username, PasswordRef: "git_token"}}
	}
	heads := func() float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for _, st := range []*plan.GitStore{conn("app", "main"), conn("shared", "stable")} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := rg.fetch.Head(context.Background(), st); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	var warmReq, coldReq int64
	time1 := func(req server.StartRequest) (float64, string) {
		start := time.Now()
		id, _ := rg.start(b, req, 201)
		return float64(time.Since(start).Microseconds()) / 1000, id
	}
	wait := func(ids ...string) {
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if _, err := env.starter.Result(ctx, id); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	}
	// One warm-up of each, so that every path has loaded its code and the cache holds main.
	_, a := time1(server.StartRequest{File: "release.yaml", Sets: []string{"pipeline.variables.greeting=hello-prod"}})
	_, c := time1(server.StartRequest{Pipeline: "release", InputSets: []string{"prod"}})
	wait(a, c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ms, l := time1(server.StartRequest{File: "release.yaml", Sets: []string{"pipeline.variables.greeting=hello-prod"}})
		localMS = append(localMS, ms)
		before := rg.git.Requests()
		ms, w := time1(server.StartRequest{Pipeline: "release", InputSets: []string{"prod"}})
		warmMS, warmReq = append(warmMS, ms), warmReq+rg.git.Requests()-before
		headsMS = append(headsMS, heads())
		b.StopTimer()
		rg.git.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline(fmt.Sprintf("push%d", i), 0)})
		b.StartTimer()
		before = rg.git.Requests()
		ms, k := time1(server.StartRequest{Pipeline: "release", InputSets: []string{"prod"}})
		coldMS, coldReq = append(coldMS, ms), coldReq+rg.git.Requests()-before
		b.StopTimer()
		wait(l, w, k)
		b.StartTimer()
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(med(localMS), "local-ms/start")
	b.ReportMetric(med(warmMS), "warm-ms/start")
	b.ReportMetric(med(headsMS), "git-heads-ms/start")
	b.ReportMetric(med(coldMS), "cold-ms/start")
	b.ReportMetric(float64(warmReq)/float64(b.N), "warm-git-requests/start")
	b.ReportMetric(float64(coldReq)/float64(b.N), "cold-git-requests/start")
}
