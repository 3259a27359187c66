// Package kubetest starts a real Kubernetes control plane for tests: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok (simulated nodes), built and started by the
// project's scripts in hack/k8s. Each caller gets its own cluster on free ports.
package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// Cluster is a running control plane.
type Cluster struct {
	Kubeconfig string // admin kubeconfig (static token, system:masters)
	Token      string // the admin bearer token
	NoRights   string // a bearer token of a user with no permissions
	Server     string // https://127.0.0.1:PORT
	Bin        string // folder with kubectl and the control-plane binaries
	state      string
	hack       string
}

// Start builds the binaries if their cache is cold (minutes, once per version set) and starts
// a cluster whose state lives in dir. Stop it with Stop.
func Start(dir string) (*Cluster, error) {
	hack := testproc.Hack("k8s")
	built, err := testproc.Built("k8s")
	if err != nil {
		return nil, fmt.Errorf("build Kubernetes tools: %v", err)
	}
	bin := filepath.Join(built, "bin")
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, state: dir, hack: hack, Kubeconfig: filepath.Join(dir, "kubeconfig"),
		Server: "https://127.0.0.1:" + strconv.Itoa(ports[0])}
	cmd := exec.Command(filepath.Join(hack, "up.sh"), bin, dir)
	cmd.Env = append(os.Environ(), "API_PORT="+strconv.Itoa(ports[0]), "ETCD_PORT="+strconv.Itoa(ports[1]), "ETCD_PEER_PORT="+strconv.Itoa(ports[2]))
	if b, err := cmd.CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("start control plane: %v\n%s", err, b)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "pki", "tokens.csv"))
	if err != nil {
		c.Stop()
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(tok)), "\n")
	c.Token = strings.SplitN(lines[0], ",", 2)[0]
	if len(lines) > 1 {
		c.NoRights = strings.SplitN(lines[1], ",", 2)[0]
	}
	return c, nil
}

// Stop stops the processes.
func (c *Cluster) Stop() {
	_, _ = testproc.Run(filepath.Join(c.hack, "down.sh"), c.state)
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return testproc.Run(filepath.Join(c.Bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}
