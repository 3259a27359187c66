package doctest

import "testing"

func TestBlocksAndShows(t *testing.T) {
	doc := "text\n```\n$ gantry run x.yaml --logs   # a comment\npipeline X #1\n  ✓ a  SUCCEEDED   6ms\n```\n\n```\n$ export A=b\n$ gantry abort y\n```\n```yaml\nkey: v\n```\n```\n$ GANTRY_TOKEN=gty_1... gantry approve y\n```\n"
	bs := Blocks(doc)
	if len(bs) != 3 || bs[0].Shell || !bs[1].Shell || bs[2].Shell {
		t.Fatalf("blocks %+v", bs)
	}
	if e := bs[0].Examples[0]; e.Command != "gantry run x.yaml --logs" || len(e.Output) != 2 || e.Line != 3 {
		t.Errorf("example %+v", e)
	}
	if w, _ := ShellWords(bs[2].Examples[0].Command); len(Env(w)) != 1 {
		t.Errorf("env of %v", w)
	}
	for _, c := range []struct {
		got, want string
		shows     bool
	}{
		{"  ✓ a   SUCCEEDED  12ms\n", "✓ a SUCCEEDED 6ms", true},
		{"│ # gantry: a attempt 1 on box7 (pid 4411)", "│ # gantry: a attempt 1 on vm (pid 29762)", true},
		{"queue  db  q-1 (one.queue)  2026-12-07 18:00:01", "queue db q-1 (one.queue) 2026-12-03 13:04:11", true},
		{"✓ release.release  SUCCEEDED  93ms  on box/19529", "✓ release.release SUCCEEDED 6ms on vm/1", true},
		{"(1 of 2 approvals)", "(2 of 2 approvals)", false},
		{"✓ a FAILED 6ms", "✓ a SUCCEEDED 6ms", false},
	} {
		if Shows(c.got, c.want) != c.shows {
			t.Errorf("Shows(%q, %q) = %v", c.got, c.want, !c.shows)
		}
	}
}
