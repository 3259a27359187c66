// Package doctest reads the command examples of the README and the guides, so that tests can
// run them as written: each `$ ` line of a fenced code block, with the lines the guide shows
// after it.
package doctest

import (
	"fmt"
	"regexp"
	"strings"
)

// SelfContained are the commands whose examples run anywhere as written: they read files of
// the repository and need no server, data directory, account or network.
var SelfContained = map[string]bool{"validate": true, "eval": true, "expand": true, "policy": true, "trigger": true}

// Example is a `$ ` line of a code block and the lines shown after it.
type Example struct {
	Command string
	Output  []string
	Line    int // 1-based, in the guide
}

// Block is a fenced code block that holds examples.
type Block struct {
	Examples []Example
	// Shell: a `$ ` line of the block is not a gantry command (an export, a curl): the block
	// sets up what its commands need outside them.
	Shell bool
}

// Blocks returns the code blocks of a Markdown text that hold `$ ` lines, in order. A trailing
// shell comment set apart by three spaces (`$ gantry x   # why`) is not part of the command.
func Blocks(doc string) []Block {
	var out []Block
	var cur *Block
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if cur != nil && len(cur.Examples) > 0 {
				out = append(out, *cur)
			}
			if cur == nil {
				cur = &Block{}
			} else {
				cur = nil
			}
			continue
		}
		switch {
		case cur == nil:
		case strings.HasPrefix(trimmed, "$ "):
			cmd := strings.TrimPrefix(trimmed, "$ ")
			if i := strings.Index(cmd, "   #"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i])
			}
			words, err := ShellWords(cmd)
			if env := Env(words); err != nil || len(env) == len(words) || words[len(env)] != "gantry" {
				cur.Shell = true
			}
			cur.Examples = append(cur.Examples, Example{Command: cmd, Line: i + 1})
		case len(cur.Examples) > 0 && trimmed != "":
			e := &cur.Examples[len(cur.Examples)-1]
			e.Output = append(e.Output, line)
		}
	}
	return out
}

// Examples returns every example of a Markdown text, in order.
func Examples(doc string) []Example {
	var out []Example
	for _, b := range Blocks(doc) {
		out = append(out, b.Examples...)
	}
	return out
}

// Env returns the leading NAME=VALUE words of a command line: the environment it sets.
func Env(words []string) []string {
	var env []string
	for _, w := range words {
		name, _, ok := strings.Cut(w, "=")
		if !ok || !envNameRe.MatchString(name) {
			break
		}
		env = append(env, w)
	}
	return env
}

var envNameRe = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ShellWords splits a command line as a POSIX shell would for the quoting the guides use; a
// pipe, redirection, substitution or list is an error (not a plain command line).
func ShellWords(s string) ([]string, error) {
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
			return nil, fmt.Errorf("a shell construct in %s", s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("no command in %q", s)
	}
	return words, nil
}

// Normalize collapses whitespace, so that column alignment does not matter.
func Normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// Elided says whether a shown line stands for more ("..." or "…") and is not compared.
func Elided(line string) bool { return strings.Contains(line, "...") || strings.Contains(line, "…") }

// variable is what changes from one run to the next in a line a guide shows: times,
// the host and process a step ran on, durations.
var variable = regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|on \S+ \(pid \d+\)|on [^\s/]+/\d+|\b\d+(\.\d+)?(µs|ms|s|m|h)\b`)

// Shows says whether got (a command's output) shows the line a guide shows, whitespace
// collapsed and with times, process IDs, host names and durations free to differ.
func Shows(got, want string) bool {
	want, got = Normalize(want), Normalize(got)
	if strings.Contains(got, want) {
		return true
	}
	var pattern strings.Builder
	last := 0
	for _, m := range variable.FindAllStringIndex(want, -1) {
		pattern.WriteString(regexp.QuoteMeta(want[last:m[0]]))
		pattern.WriteString("(?:" + variable.String() + ")")
		last = m[1]
	}
	pattern.WriteString(regexp.QuoteMeta(want[last:]))
	re, err := regexp.Compile(pattern.String())
	return err == nil && re.MatchString(got)
}
