package nodetest

import (
	"strings"
	"testing"
	"time"
)

// The node runs a container from the loopback registry and its log reaches the API.
func TestNodeRunsContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if out, err := n.Kubectl("run", "hello", "--restart=Never", "--image="+n.Image(Busybox), "--", "bash", "-c", "echo hello from $BASH_VERSION"); err != nil {
		t.Fatal(out, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		phase, _ := n.Kubectl("get", "pod", "hello", "-o", "jsonpath={.status.phase}")
		if phase == "Succeeded" {
			break
		}
		if phase == "Failed" || time.Now().After(deadline) {
			desc, _ := n.Kubectl("describe", "pod", "hello")
			t.Fatalf("pod phase %q:\n%s", phase, desc)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, err := n.Kubectl("logs", "hello")
	if err != nil || !strings.HasPrefix(out, "hello from 5.") {
		t.Fatalf("logs: %q %v", out, err)
	}
}
