package pipeline

import (
	"strings"
	"testing"
)

const stepHead = `pipeline:
  name: a
  identifier: a
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: x
                  identifier: x
                  spec:
`

// A line indented wrongly is reported at its own line and column, not at the block the parser
// was reading, and the hint names the columns it could belong to and the keys there.
func TestIndentationErrorsAtTheLineThatBrokeThem(t *testing.T) {
	cases := []struct {
		name, body, pos string
		hint            []string
	}{
		{"dedented between two blocks", `                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: echo hi
                   timeout: 1m
`, "a.yaml:22:20", []string{"column 20, where no block around it starts", "column 19 to sit beside `type` (line 13)", "column 21 to sit beside `shell` (line 17)"}},
		{"deeper than a key with a value", `                    shell: Bash
                      source:
                      type: Inline
`, "a.yaml:18:23", []string{"deeper than `shell` on line 17, whose value is already given there: start it at column 21"}},
		{"over-indented after the script", `                    source:
                      type: Inline
                      spec:
                        script: echo
                  shell: Bash
                    timeout: 1m
`, "a.yaml:22:21", []string{"deeper than `shell` on line 21"}},
	}
	for _, c := range cases {
		_, diags := Parse("a.yaml", []byte(stepHead+c.body))
		if len(diags) != 1 || diags[0].Code != "yaml-syntax" {
			t.Errorf("%s: want one yaml-syntax error, got %v", c.name, diags)
			continue
		}
		d := diags[0]
		if !strings.HasPrefix(d.Pos.String(), c.pos) {
			t.Errorf("%s: at %s, want %s (%s)", c.name, d.Pos, c.pos, d.Message)
		}
		for _, h := range c.hint {
			if !strings.Contains(d.Hint, h) {
				t.Errorf("%s: hint %q lacks %q", c.name, d.Hint, h)
			}
		}
	}
}

// Valid YAML never trips the indentation reader: block scalars, multi-line plain scalars,
// sequences at their parent's column, flow collections and comments.
func TestIndentationReaderAcceptsValidYAML(t *testing.T) {
	src := `a:
  b: |
    deeper: lines
      of a script: here
  c: a plain
    scalar continued
  d:
  - x: 1
    y: 2
  -   z: 3
      w: 4
  e: {f: 1,
    g: 2}
  # a comment
      # an indented comment
  h: "quoted: value"
i: 1
`
	if issue, ok := findIndentIssue([]byte(src), 1); ok {
		t.Errorf("valid YAML reported at line %d: %s", issue.line, issue.hint)
	}
}
