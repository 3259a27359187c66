package shell_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/shell"
)

// runCommand runs c with s and returns its result and its log.
func runCommand(t *testing.T, s *shell.Scripts, c shell.Command) (shell.Result, string) {
	t.Helper()
	store := logs.Store{Dir: t.TempDir()}
	log, err := store.Open("e-1", "s.run")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Run(ctx, c, log, &secrets.Masker{})
	if err != nil {
		t.Fatal(err)
	}
	log.Close()
	return res, readLog(t, store)
}

func readLog(t *testing.T, store logs.Store) string {
	t.Helper()
	var b strings.Builder
	if err := store.Copy(context.Background(), &b, "e-1", "s.run"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A build machine's command runs as a container step's does, in a subshell of the stage's
// fork server and in a shell of its own alike (a script naming $0 cannot fork): set -e, its
// working directory, the base environment and its own, output variables read after it, none
// when it ends its shell first, and Gantry's scratch directory gone after it.
func TestScriptsRunCommandsAsContainerSteps(t *testing.T) {
	for _, sh := range []string{"Sh", "Bash"} {
		for _, mode := range []struct{ name, extra string }{{"forked", ""}, {"own-shell", ": $0\n"}} {
			t.Run(sh+"/"+mode.name, func(t *testing.T) {
				s := &shell.Scripts{Env: []string{"PATH=" + os.Getenv("PATH"), "BASE=base"}}
				defer s.Close()
				work := t.TempDir()
				scratch := filepath.Join(t.TempDir(), "step")
				c := shell.Command{Stage: "e-1/s", Shell: sh, Dir: work, Scratch: scratch, Errexit: true,
					Env: map[string]string{"MINE": "it's mine"}, Outputs: []string{"X", "Y"}}

				c.Script = mode.extra + `echo "$PWD|$BASE|$MINE|${HOME-unset}"; X=1; Y="two words"`
				res, log := runCommand(t, s, c)
				if want := work + "|base|it's mine|unset"; res.Code != 0 || !strings.Contains(log, want) || res.Last != want {
					t.Fatalf("code %d, last %q, log:\n%s\nwant %q", res.Code, res.Last, log, want)
				}
				if res.Outputs["X"] != "1" || res.Outputs["Y"] != "two words" {
					t.Fatalf("outputs %v", res.Outputs)
				}
				if _, err := os.Stat(scratch); !os.IsNotExist(err) {
					t.Fatalf("scratch directory after the command: %v", err)
				}
				// A forked command's parent is the fork server; a shell of its own is ours.
				c.Script = mode.extra + `read -r stat < /proc/self/stat; set -- ${stat##*) }; echo "parent $2"`
				res, _ = runCommand(t, s, c)
				if ours := res.Last == "parent "+strconv.Itoa(os.Getpid()); ours != (mode.name == "own-shell") {
					t.Fatalf("%s: %q (this process is %d)", mode.name, res.Last, os.Getpid())
				}

				c.Script = mode.extra + "echo before\nfalse\necho after\nX=late"
				res, log = runCommand(t, s, c)
				if res.Code != 1 || strings.Contains(log, "after") || res.Outputs != nil || res.Last != "before" {
					t.Fatalf("set -e: code %d, outputs %v, last %q, log:\n%s", res.Code, res.Outputs, res.Last, log)
				}

				c.Script = mode.extra + "X=1; exit 0"
				if res, _ = runCommand(t, s, c); res.Code != 0 || res.Outputs != nil {
					t.Fatalf("explicit exit: code %d, outputs %v", res.Code, res.Outputs)
				}

				c.Outputs, c.Script = nil, mode.extra+"exit 3"
				if res, _ = runCommand(t, s, c); res.Code != 3 {
					t.Fatalf("exit 3: code %d", res.Code)
				}
			})
		}
	}
}

// The end of a stage ends what its commands left running in the background.
func TestScriptsEndStageEndsWhatStepsLeft(t *testing.T) {
	for _, sh := range []string{"Sh", "Bash"} {
		t.Run(sh, func(t *testing.T) {
			s := &shell.Scripts{}
			defer s.Close()
			pidFile := filepath.Join(t.TempDir(), "pid")
			c := shell.Command{Stage: "e-1/s", Shell: sh, Dir: t.TempDir(), Scratch: filepath.Join(t.TempDir(), "step"),
				Script: "sleep 300 >/dev/null 2>&1 & echo $! > " + pidFile}
			if res, _ := runCommand(t, s, c); res.Code != 0 {
				t.Fatalf("code %d", res.Code)
			}
			b, _ := os.ReadFile(pidFile)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !alive(pid) {
				t.Fatal("the background child is already gone")
			}
			s.EndStage("other/stage")
			time.Sleep(100 * time.Millisecond)
			if !alive(pid) {
				t.Fatal("another stage's end ended the child")
			}
			s.EndStage("e-1/s")
			for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("process %d still runs after its stage ended", pid)
				}
			}
		})
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}
