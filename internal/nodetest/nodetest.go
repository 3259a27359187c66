// Package nodetest starts a single-node Kubernetes whose node really runs containers, for
// tests: the control plane of hack/k8s, a kubelet, containerd with Debian's runc and a
// registry on loopback (hack/node), filled with images built here from Debian's static
// busybox and bash, from Gantry's own gantry-helper and from BuildKit (hack/buildkit). There
// is one node per machine (the kubelet's ports and host paths are fixed): Start takes a
// machine-wide lock that Stop releases, so only one test process uses it at a time.
package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/ociimage"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// Images pushed by Start, as the node pulls them.
const (
	Busybox = "busybox:1"       // Debian's busybox-static as /bin/sh and its applets, bash-static as /bin/bash
	Helper  = "gantry-helper:1" // Gantry's helper
	Pause   = "pause:1"         // the pod sandbox
	// BuildKit is the image BuildAndPush steps run in (hack/buildkit): a worker's --buildkit-image.
	BuildKit = "gantry-buildkit:1"
)

// Node is a running node and its control plane.
type Node struct {
	Kubeconfig string // admin kubeconfig
	Server     string // https://127.0.0.1:PORT
	Token      string // the admin bearer token
	Registry   string // host:port of the loopback registry the node pulls from
	Bin        string // kubectl and the control-plane binaries
	state      string
	hack       string
	lock       *os.File
}

// Start builds what is missing (cached outside the repository, minutes when cold) and starts
// the node with its state under dir. Always call Stop: it undoes the host changes.
func Start(dir string) (*Node, error) {
	root := testproc.RepoRoot()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "gantry-node.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, err
	}
	n := &Node{state: dir, hack: filepath.Join(root, "hack"), lock: lock, Kubeconfig: filepath.Join(dir, "cp", "kubeconfig")}
	k8s, err := testproc.Built("k8s")
	if err != nil {
		n.unlock()
		return nil, fmt.Errorf("build Kubernetes tools: %v", err)
	}
	node, err := testproc.Built("node")
	if err != nil {
		n.unlock()
		return nil, fmt.Errorf("build the node's tools: %v", err)
	}
	n.Bin = filepath.Join(k8s, "bin")
	ports, err := freeport.Ports(4)
	if err != nil {
		n.unlock()
		return nil, err
	}
	n.Registry = "127.0.0.1:" + strconv.Itoa(ports[3])
	n.Server = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(filepath.Join(n.hack, "node", "up.sh"), n.Bin, node, dir)
	cmd.Env = append(os.Environ(), "API_PORT="+strconv.Itoa(ports[0]), "ETCD_PORT="+strconv.Itoa(ports[1]),
		"ETCD_PEER_PORT="+strconv.Itoa(ports[2]), "REGISTRY_PORT="+strconv.Itoa(ports[3]))
	if b, err := cmd.CombinedOutput(); err != nil {
		n.Stop()
		return nil, fmt.Errorf("start the node: %v\n%s", err, b)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "cp", "pki", "tokens.csv"))
	if err != nil {
		n.Stop()
		return nil, err
	}
	n.Token = strings.SplitN(string(tok), ",", 2)[0]
	if err := n.pushImages(root, filepath.Join(node, "bin", "pause")); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// Stop stops the node, undoes its host changes and releases the machine-wide lock.
func (n *Node) Stop() {
	_, _ = testproc.Run(filepath.Join(n.hack, "node", "down.sh"), n.state)
	n.unlock()
}

func (n *Node) unlock() {
	if n.lock != nil {
		_ = syscall.Flock(int(n.lock.Fd()), syscall.LOCK_UN)
		n.lock.Close()
		n.lock = nil
	}
}

// Image is the reference the node pulls an image of Start's by.
func (n *Node) Image(image string) string { return n.Registry + "/" + image }

// Kubectl runs kubectl against the cluster and returns its combined output.
func (n *Node) Kubectl(args ...string) (string, error) {
	return testproc.Run(filepath.Join(n.Bin, "kubectl"), append([]string{"--kubeconfig", n.Kubeconfig}, args...)...)
}

// pushImages builds and pushes the sandbox, busybox and helper images.
func (n *Node) pushImages(root, pause string) error {
	tmp, err := os.MkdirTemp("", "gantry-helper-build")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	helper := filepath.Join(tmp, "gantry-helper")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", helper, "./cmd/gantry-helper")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build gantry-helper: %v\n%s", err, b)
	}
	box, boxConfig, err := ociimage.BusyboxImage()
	if err != nil {
		return err
	}
	kit, kitConfig, err := ociimage.BuildKitImage()
	if err != nil {
		return err
	}
	images := []struct {
		ref   string
		files []ociimage.File
		cfg   v1.Config
	}{
		{Pause, []ociimage.File{{Path: "pause", Src: pause}}, v1.Config{Entrypoint: []string{"/pause"}}},
		{Busybox, box, boxConfig},
		{Helper, []ociimage.File{{Path: "gantry-helper", Src: helper}}, v1.Config{Entrypoint: []string{"/gantry-helper"}}},
		{BuildKit, kit, kitConfig},
	}
	for _, im := range images {
		if err := ociimage.Push(n.Image(im.ref), im.files, im.cfg); err != nil {
			return fmt.Errorf("push %s: %v", im.ref, err)
		}
	}
	return nil
}
