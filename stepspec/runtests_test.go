package stepspec

import "testing"

func TestRunTestsCommand(t *testing.T) {
	got, ok := RunTestsCommand("Maven", "test -q", " ./setup.sh ", "")
	if !ok || got != "./setup.sh\nmvn test -q" {
		t.Fatalf("RunTestsCommand = %q, %v", got, ok)
	}
	if got, _ := RunTestsCommand("Pytest", "", "", "echo done"); got != "pytest\necho done" {
		t.Fatalf("without args = %q", got)
	}
	if _, ok := RunTestsCommand("Make", "", "", ""); ok {
		t.Fatal("an unknown buildTool was accepted")
	}
	if tools := BuildTools(); len(tools) != len(TestTools) || tools[0] != "Bazel" {
		t.Fatalf("BuildTools = %v", tools)
	}
}
