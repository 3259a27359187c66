package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// ExecutionOutputLimit is the most bytes of output variables (as JSON) one execution keeps, all
// its stages together. Outputs travel in workflow results (a stage's tree and its expression
// data both hold them, and the pipeline's result every stage's) and in later stages' inputs,
// each one Temporal payload of at most 2 MB: under this limit all of them fit, however the
// outputs are spread. A step whose outputs would take its stage over its share fails, saying so.
const ExecutionOutputLimit = 512 << 10

// outputBudget is the output variables a stage keeps, by step path, against its limit.
type outputBudget struct {
	limit   int
	sizes   map[string]int
	total   int
	version *workflow.Version // changeOutputLimit, read when the limit is first reached
}

func newOutputBudget(limit int) *outputBudget {
	if limit <= 0 || limit > ExecutionOutputLimit {
		limit = ExecutionOutputLimit
	}
	return &outputBudget{limit: limit, sizes: map[string]int{}}
}

// guarded reports whether this stage runs the output limits (changeOutputLimit); stages
// recorded before them kept every output.
func (o *outputBudget) guarded(ctx workflow.Context) bool {
	if o.version == nil {
		v := workflow.GetVersion(ctx, changeOutputLimit, workflow.DefaultVersion, 1)
		o.version = &v
	}
	return *o.version == 1
}

// keep records the outputs of the step at path (a retry's replace its earlier ones), or
// refuses them when the stage would then hold more than its limit.
func (o *outputBudget) keep(ctx workflow.Context, path string, outputs map[string]any) *contract.Failure {
	b, _ := json.Marshal(outputs)
	others := o.total - o.sizes[path]
	if others+len(b) > o.limit && o.guarded(ctx) {
		return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf(
			"the step's output variables take %d bytes; with the %d bytes of outputs kept before it that is over the %d bytes this stage may keep (%d for a whole execution, so that every result fits in one Temporal payload); write large values to a file and output its path",
			len(b), others, o.limit, ExecutionOutputLimit)}
	}
	o.sizes[path] = len(b)
	o.total = others + len(b)
	return nil
}

// share is the limit to hand to one of n workflows that run part of this stage's steps at
// once (loop batches): what is left, split evenly.
func (o *outputBudget) share(n int) int {
	return max(1, (o.limit-o.total)/max(1, n))
}

// add counts outputs a part of the stage kept (a loop batch's result).
func (o *outputBudget) add(path string, bytes int) {
	o.sizes[path] += bytes
	o.total += bytes
}

// shareKey marks a context that runs one of several stages at once; its value is how many.
type shareKey struct{}

// sharing is ctx for one of n stages that run beside each other (a parallel block's, a stage
// loop's iterations): each may keep 1/n of what is left when it starts.
func sharing(ctx workflow.Context, n int) workflow.Context {
	return workflow.WithValue(ctx, shareKey{}, sharesOf(ctx)*max(1, n))
}

func sharesOf(ctx workflow.Context) int {
	v, _ := ctx.Value(shareKey{}).(int)
	return max(1, v)
}

// keptOutputs is the bytes of output variables the steps of tree kept, as outputBudget counts.
func keptOutputs(tree *Node) int {
	n := 0
	tree.Walk(func(c *Node) {
		if c.Outputs != nil {
			b, _ := json.Marshal(c.Outputs)
			n += len(b)
		}
	})
	return n
}
