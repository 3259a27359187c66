package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// aliasBomb is levels of nine-way aliases under a pipeline's delegateSelectors: under a
// kilobyte that stands for 9^(levels+1) nodes.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "pipeline:\n  name: p\n  identifier: p\n  delegateSelectors: *a%d\n", levels)
	return b.String()
}

// A document whose aliases multiply past the limit is refused at an alias, at once, before
// anything reads it; one whose anchors repeat a block as files do is read.
func TestAliasExpansionIsBounded(t *testing.T) {
	for _, levels := range []int{7, 10, 30} {
		src := aliasBomb(levels)
		start := time.Now()
		f, diags := ParseYAML("bomb.yaml", []byte(src))
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%d levels (%d bytes): refused after %s", levels, len(src), took)
		}
		if f.Root != nil || len(diags) != 1 || diags[0].Code != "alias-expansion" {
			t.Fatalf("%d levels: root %v, diagnostics %v", levels, f.Root != nil, diags)
		}
		if d := diags[0]; d.Pos.Line < 2 || !strings.Contains(d.Message, "limit is 100000 plus 10 per node written") {
			t.Errorf("%d levels: %s at %d:%d", levels, d.Message, d.Pos.Line, d.Pos.Col)
		}
	}
	ok := "common: &common {type: ShellScript, spec: {shell: Bash, source: {type: Inline, spec: {script: echo}}}}\n" +
		"pipeline:\n  name: p\n  identifier: p\n  stages:\n"
	for i := 0; i < 50; i++ {
		ok += fmt.Sprintf("    - stage: {name: s%d, identifier: s%d, type: Custom, spec: {execution: {steps: [{step: *common}]}}}\n", i, i)
	}
	if f, diags := ParseYAML("anchors.yaml", []byte(ok)); f.Root == nil || len(diags) != 0 {
		t.Errorf("a file that repeats an anchor: %v", diags)
	}
}
