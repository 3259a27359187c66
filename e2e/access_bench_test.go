package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkAPIRoles measures what roles cost a request: the same GET of an execution's tree,
// by one of 1,000 users, through a server whose identity file defines 50 roles (authorized:
// the file is read, the execution's pipeline looked up, the roles matched) and through one
// whose file has the same users and no roles. Calls alternate; the ratio is of medians.
func BenchmarkAPIRoles(b *testing.B) {
	ctx := context.Background()
	exec, err := env.starter.Start(ctx, compile(b, "roles_bench.yaml", []byte(outcomeFailedPipeline), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := env.starter.Result(ctx, exec.ID); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	plain, roles := &identity.Directory{}, &identity.Directory{}
	var tok string
	for i := range 1000 {
		group := fmt.Sprintf("team%d", i%50)
		t, err := plain.AddUser(fmt.Sprintf("user%d", i), "", []string{group})
		if err != nil {
			b.Fatal(err)
		}
		roles.Users = append(roles.Users, plain.Users[i])
		tok = t
	}
	for i := range 50 {
		name := fmt.Sprintf("role%d", i)
		if err := roles.SetRole(identity.Role{Name: name, Permissions: []identity.Permission{{Actions: []identity.Action{identity.View, identity.Execute},
			Pipelines: []string{fmt.Sprintf("team%d_*", i), "outcome_*"}}}}); err != nil {
			b.Fatal(err)
		}
		if err := roles.Grant(fmt.Sprintf("team%d", i), name); err != nil {
			b.Fatal(err)
		}
	}
	urls := map[bool]string{}
	for withRoles, d := range map[bool]*identity.Directory{false: plain, true: roles} {
		path := filepath.Join(dir, fmt.Sprintf("users-%v.yaml", withRoles))
		if err := d.Save(path); err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: path}))
		b.Cleanup(srv.Close)
		urls[withRoles] = srv.URL
	}
	took := map[bool][]float64{}
	b.ResetTimer()
	for range b.N {
		for _, withRoles := range []bool{false, true} {
			start := time.Now()
			if err := call(urls[withRoles], tok, "GET", "/api/v1/executions/"+exec.ID, nil, http.StatusOK, nil); err != nil {
				b.Fatal(err)
			}
			took[withRoles] = append(took[withRoles], float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.StopTimer()
	with, without := median(took[true]), median(took[false])
	b.ReportMetric(with, "ms/call-roles")
	b.ReportMetric(without, "ms/call-no-roles")
	b.ReportMetric(with/without, "ratio")
}
