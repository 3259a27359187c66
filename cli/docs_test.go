package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/internal/doctest"
)

var (
	// A gantry command line in the docs: `gantry validate p.yaml --for-run`, up to the end of a
	// code span or line.
	commandRe = regexp.MustCompile("gantry ((?:[a-z]+ ?){1,3})([^`\\n|]*)")
	flagRe    = regexp.MustCompile(`(?:^|\s|\[)--([a-z][a-z0-9-]*)`)
)

// Every command and flag the README and the guides in docs/ show exists: a renamed flag or
// command makes this fail before a reader finds out.
func TestDocsNameRealCommandsAndFlags(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	root := newRoot()
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, m := range commandRe.FindAllStringSubmatch(line, -1) {
				words := strings.Fields(m[1])
				cmd, rest, err := root.Find(words)
				if err != nil || cmd == root {
					continue // prose such as "gantry runs", not a command line
				}
				if len(rest) > 0 && cmd.HasSubCommands() && cmd.Args == nil {
					t.Errorf("%s: `gantry %s`: no such command", f, m[1])
					continue
				}
				for _, fm := range flagRe.FindAllStringSubmatch(m[2]+" "+strings.Join(rest, " "), -1) {
					name := fm[1]
					if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil && name != "help" {
						t.Errorf("%s: `%s`: %s has no flag --%s", f, strings.TrimSpace(m[0]), cmd.CommandPath(), name)
					}
					checked++
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags checked: the pattern no longer finds the docs' command lines", checked)
	}
}

// Every `$ gantry ...` line of a code block in the README and the guides whose command is
// self-contained runs as written, from the repository's root, and prints every line the guide
// shows after it (a line with "..." stands for more and is not compared): a guide that drifts
// from the product fails here.
func TestDocsCommandBlocksRunAsWritten(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	ran := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range doctest.Examples(string(b)) {
			args, err := doctest.ShellWords(ex.Command)
			if err != nil || len(args) < 2 || args[0] != "gantry" || !doctest.SelfContained[args[1]] {
				continue
			}
			for i, a := range args {
				if strings.HasPrefix(a, "examples/") || strings.HasPrefix(a, "policies/") {
					args[i] = "../" + a
				}
			}
			code, out, errs := run(args[1:]...)
			got := strings.ReplaceAll(out+errs, "../", "")
			for _, want := range ex.Output {
				if !doctest.Elided(want) && !strings.Contains(doctest.Normalize(got), doctest.Normalize(want)) {
					t.Errorf("%s:%d: `%s` (exit %d) does not print\n  %s\nit printed:\n%s", f, ex.Line, ex.Command, code, want, out+errs)
				}
			}
			ran++
		}
	}
	if ran < 5 {
		t.Errorf("ran %d examples: the guides' code blocks are no longer found", ran)
	}
}
