package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// selfContained are the commands a guide's example runs here as written: they read files of
// the repository and need no server, account or network.
var selfContained = map[string]bool{"validate": true, "eval": true, "expand": true, "policy": true, "trigger": true}

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
		for _, ex := range commandExamples(string(b)) {
			args, err := shellWords(ex.command)
			if err != nil || len(args) < 2 || args[0] != "gantry" || !selfContained[args[1]] {
				continue
			}
			for i, a := range args {
				if strings.HasPrefix(a, "examples/") || strings.HasPrefix(a, "policies/") {
					args[i] = "../" + a
				}
			}
			code, out, errs := run(args[1:]...)
			got := normalize(strings.ReplaceAll(out+errs, "../", ""))
			for _, want := range ex.output {
				if strings.Contains(want, "...") || strings.Contains(want, "…") {
					continue
				}
				if !strings.Contains(got, normalize(want)) {
					t.Errorf("%s: `%s` (exit %d) does not print\n  %s\nit printed:\n%s", f, ex.command, code, want, out+errs)
				}
			}
			ran++
		}
	}
	if ran < 5 {
		t.Errorf("ran %d examples: the guides' code blocks are no longer found", ran)
	}
}

// commandExample is a `$ ` line of a code block and the lines shown after it.
type commandExample struct {
	command string
	output  []string
}

func commandExamples(doc string) []commandExample {
	var out []commandExample
	in := false
	block := 0 // the first example of the current block
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			in = !in
			block = len(out)
			continue
		}
		switch {
		case !in:
		case strings.HasPrefix(trimmed, "$ "):
			cmd := strings.TrimPrefix(trimmed, "$ ")
			if i := strings.Index(cmd, "   #"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i])
			}
			out = append(out, commandExample{command: cmd})
		case len(out) > block && trimmed != "":
			out[len(out)-1].output = append(out[len(out)-1].output, line)
		}
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the quoting the guides use.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote in %s", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '|' || c == '>' || c == '<' || c == '&' || c == ';' || c == '$' || c == '`':
			return nil, fmt.Errorf("a shell construct in %s", s) // not a plain command line
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }
