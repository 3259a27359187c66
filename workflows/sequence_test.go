package workflows_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/workflows"
)

// numbersCallback records what a nextBatch or next update answered.
type numbersCallback struct {
	t   *testing.T
	got *[]int64
}

func (c numbersCallback) Accept()          {}
func (c numbersCallback) Reject(err error) { c.t.Errorf("update refused: %v", err) }
func (c numbersCallback) Complete(v any, err error) {
	if err != nil {
		c.t.Errorf("update failed: %v", err)
		return
	}
	switch x := v.(type) {
	case []int64:
		*c.got = append(*c.got, x...)
	case int64:
		*c.got = append(*c.got, x)
	default:
		c.t.Errorf("answer %T", v)
	}
}

// A batch hands out one number per key in order; a key gets the number it got before, in the
// same batch, in an earlier one or through the one-number update keyed by its ID; "" and random
// update IDs always get new numbers.
func TestSequenceBatches(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Sequence, workflow.RegisterOptions{Name: workflows.SequenceName})
	var first, second, third, single []int64
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNextBatch, "b1", numbersCallback{t, &first}, []string{"d1", "", "d2", "d1"})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNext, "d3", numbersCallback{t, &single})
		env.UpdateWorkflow(workflows.UpdateNext, "0b3c3f1e-8a5e-4d43-9a0e-2c7f8b1d6e55", numbersCallback{t, &single})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNextBatch, "b2", numbersCallback{t, &second}, []string{"d2", "d3", "", "d4"})
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNextBatch, "b3", numbersCallback{t, &third}, []string{})
	}, 4*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
	env.ExecuteWorkflow(workflows.SequenceName, int64(10), []workflows.KeyedNumber{{Key: "d4", Number: 7}})
	if want := []int64{11, 12, 13, 11}; !slices.Equal(first, want) {
		t.Errorf("first batch %v, want %v", first, want)
	}
	if want := []int64{14, 15}; !slices.Equal(single, want) {
		t.Errorf("single numbers %v, want %v", single, want)
	}
	if want := []int64{13, 14, 16, 7}; !slices.Equal(second, want) {
		t.Errorf("second batch %v, want %v (d4 was kept from an earlier run)", second, want)
	}
	if len(third) != 0 {
		t.Errorf("an empty batch took %v", third)
	}
}

// The numbers of batches count towards continue-as-new, and the keys they took are carried over.
func TestSequenceBatchesContinueAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Sequence, workflow.RegisterOptions{Name: workflows.SequenceName})
	var got []int64
	env.RegisterDelayedCallback(func() {
		keys := make([]string, 500)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		env.UpdateWorkflow(workflows.UpdateNextBatch, "big", numbersCallback{t, &got}, keys)
	}, time.Second)
	env.ExecuteWorkflow(workflows.SequenceName, int64(0), []workflows.KeyedNumber(nil))
	if len(got) != 500 || got[499] != 500 {
		t.Fatalf("numbers %d, last %v", len(got), got[len(got)-1:])
	}
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("after 500 numbers: %v", env.GetWorkflowError())
	}
}

// refusedCallback expects an update to be refused.
type refusedCallback struct {
	t       *testing.T
	refused *bool
}

func (c refusedCallback) Accept()          {}
func (c refusedCallback) Reject(err error) { *c.refused = true }
func (c refusedCallback) Complete(v any, err error) {
	c.t.Errorf("update completed with %v %v, want it refused", v, err)
}

// A key bound to a number taken ahead keeps its first number; only numbers the sequence
// handed out can be bound; numbers given back lower the sequence while they are its last ones
// and unbound.
func TestSequenceBindAndGiveBack(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Sequence, workflow.RegisterOptions{Name: workflows.SequenceName})
	var ahead, binds, last, after []int64
	refused := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNextBatch, "ahead", numbersCallback{t, &ahead}, []string{"", "", ""})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateBind, "b1", numbersCallback{t, &binds}, []workflows.KeyedNumber{{Key: "k1", Number: 12}})
		env.UpdateWorkflow(workflows.UpdateBind, "b2", numbersCallback{t, &binds}, []workflows.KeyedNumber{{Key: "k1", Number: 13}, {Key: "d4", Number: 13}})
		env.UpdateWorkflow(workflows.UpdateBind, "b3", refusedCallback{t, &refused}, []workflows.KeyedNumber{{Key: "k2", Number: 99}})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateGiveBack, "g1", numbersCallback{t, &last}, []int64{12, 13})
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateNextBatch, "after", numbersCallback{t, &after}, []string{"k1", ""})
	}, 4*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
	env.ExecuteWorkflow(workflows.SequenceName, int64(10), []workflows.KeyedNumber{{Key: "d4", Number: 7}})
	if want := []int64{11, 12, 13}; !slices.Equal(ahead, want) {
		t.Errorf("numbers ahead %v, want %v", ahead, want)
	}
	if want := []int64{12, 12, 7}; !slices.Equal(binds, want) {
		t.Errorf("binds answered %v, want %v (a key keeps its first number)", binds, want)
	}
	if !refused {
		t.Error("a number never handed out was bound")
	}
	if want := []int64{12}; !slices.Equal(last, want) {
		t.Errorf("after giving back 12 and 13 the sequence stands at %v, want %v (12 is bound)", last, want)
	}
	if want := []int64{12, 13}; !slices.Equal(after, want) {
		t.Errorf("after the give-back %v, want %v", after, want)
	}
}
