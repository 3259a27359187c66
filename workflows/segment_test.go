package workflows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/plan"
)

func stagesNamed(prefix string, n int) []*plan.Node {
	out := make([]*plan.Node, n)
	for i := range out {
		out[i] = &plan.Node{Kind: plan.KindStage, ID: fmt.Sprintf("%s%d", prefix, i)}
	}
	return out
}

// Segments hold at most size stages, never split a sequential element, and cut a wide
// parallel block into segments of its branches that keep the block's index.
func TestCutSegments(t *testing.T) {
	elems := append(stagesNamed("a", 5), &plan.Node{Kind: plan.KindParallel, Children: stagesNamed("p", 7)})
	elems = append(elems, &plan.Node{Kind: plan.KindParallel, Children: stagesNamed("q", 2)})
	elems = append(elems, stagesNamed("z", 2)...)
	var got []string
	for _, u := range cutSegments(elems, 3) {
		got = append(got, fmt.Sprintf("%d:%s", u.parallel, strings.Join(stageIDs(u.elems), ",")))
	}
	want := "-1:a0,a1,a2 -1:a3,a4 5:p0,p1,p2 5:p3,p4,p5 5:p6 -1:q0,q1,z0 -1:z1"
	if strings.Join(got, " ") != want {
		t.Errorf("segments\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// Heavy stages fill a segment by their plan's size before its stage count.
func TestCutSegmentsByBytes(t *testing.T) {
	elems := stagesNamed("h", 4)
	for _, e := range elems {
		e.Name = strings.Repeat("x", segmentBytes/3)
	}
	if n := len(cutSegments(elems, 200)); n != 2 {
		t.Errorf("%d segments of 4 stages of a third of a segment each", n)
	}
}
