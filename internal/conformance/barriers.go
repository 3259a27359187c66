package conformance

import (
	"fmt"
	"strings"

	"github.com/gantry-cd/gantry/status"
)

func barrierStep(id, ref, timeout string) string {
	return fmt.Sprintf(`{step: {type: Barrier, name: %s, identifier: %s, timeout: %s, spec: {barrierRef: %s}}}`, id, id, timeout, ref)
}

func withBarriers(yaml string, refs ...string) string {
	var b strings.Builder
	b.WriteString("  flowControl:\n    barriers:\n")
	for _, r := range refs {
		fmt.Fprintf(&b, "      - {name: %s, identifier: %s}\n", r, r)
	}
	return strings.Replace(yaml, "  stages:\n", b.String()+"  stages:\n", 1)
}

// Barriers returns cases C56-C59 of spec 16.E and a looped participant.
func Barriers() []Case {
	migrate := func(when, body string) string {
		return stage("migrate", when, script("run_migration", body, ""), barrierStep("sync_point", "db", "1m"))
	}
	app := func(timeout string) string {
		return stage("app", "", barrierStep("sync_point", "db", timeout), ok("start_app"))
	}
	return []Case{
		{ID: "C56", YAML: withBarriers(pipeline("c56", parallel(migrate("", "sleep 2"), app("1m"))), "db"),
			Want:  map[string]status.Status{"migrate.sync_point": S, "app.sync_point": S, "app.start_app": S, "": S},
			Order: []string{"migrate.sync_point", "app.start_app"}},
		{ID: "C57", YAML: withBarriers(pipeline("c57", parallel(migrate("", "sleep 1; exit 1"), app("1m"))), "db"),
			Want: map[string]status.Status{"migrate.run_migration": F, "migrate.sync_point": K, "app.sync_point": F,
				"app.start_app": K, "migrate": F, "app": F}},
		{ID: "C58", YAML: withBarriers(pipeline("c58", parallel(migrate(`{pipelineStatus: Success, condition: "false"}`, "exit 0"), app("1m"))), "db"),
			Want: map[string]status.Status{"migrate": K, "app.sync_point": S, "app.start_app": S, "": S}},
		{ID: "C59", YAML: withBarriers(pipeline("c59", parallel(migrate("", "sleep 8"), app(short))), "db"),
			Want: map[string]status.Status{"app.sync_point": EX, "app.start_app": K, "migrate.sync_point": F, "migrate": F}},
		{ID: "looped-participant", YAML: withBarriers(pipeline("lbar", parallel(
			looped(stage("shard", "", script("work", "sleep 1", ""), barrierStep("sync_point", "db", "1m")), "{parallelism: 2}"),
			app("1m"))), "db"),
			Want: map[string]status.Status{"shard_0.sync_point": S, "shard_1.sync_point": S, "app.start_app": S, "": S}},
	}
}
