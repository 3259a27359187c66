package container

import (
	"fmt"
	"testing"

	"github.com/gantry-cd/gantry/contract"
)

// JUnit reports of the common shapes (nested suites, a lone suite, errors and skips) add up;
// a document that is not JUnit is refused and counts nothing.
func TestAddJUnit(t *testing.T) {
	sum := &contract.TestSummary{}
	reports := []string{
		`<testsuites><testsuite name="a"><testsuite name="a.b"><testcase classname="a.b" name="one"/><testcase classname="a.b" name="two"><error/></testcase></testsuite></testsuite></testsuites>`,
		`<?xml version="1.0"?><testsuite name="c"><testcase name="three"><skipped/></testcase><testcase classname="c" name="four"><failure message="x">trace</failure></testcase></testsuite>`,
	}
	for _, r := range reports {
		if err := addJUnit(sum, []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if sum.Total != 4 || sum.Failed != 2 || sum.Skipped != 1 || sum.Reports != 2 || fmt.Sprint(sum.Failing) != "[a.b.two c.four]" {
		t.Errorf("summary %+v", sum)
	}
	if err := addJUnit(sum, []byte(`<html><body/></html>`)); err == nil || sum.Reports != 2 {
		t.Errorf("a non-JUnit document: %v, %+v", err, sum)
	}
}
