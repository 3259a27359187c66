// Package ctrtest runs a containerd of its own for tests (hack/node's build, Debian's runc),
// without Kubernetes, and builds the static gantry-helper and the busybox image its
// containers run. Containers need root; Start skips the test without it.
package ctrtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gantry-cd/gantry/internal/ociimage"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// Containerd is a running containerd; it stops when the test ends.
type Containerd struct {
	Address string // its socket
	Bin     string // containerd, its shim and ctr
}

// Start starts a containerd whose state lies under a folder of the test's.
func Start(t testing.TB) *Containerd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("containers need root")
	}
	built, err := testproc.Built("node")
	if err != nil {
		t.Fatalf("build containerd: %v", err)
	}
	bin := filepath.Join(built, "bin")
	// Short paths: the socket's must stay under the 108 bytes of a unix address.
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{Address: filepath.Join(dir, "c.sock"), Bin: bin}
	tmpl, err := os.ReadFile(testproc.Hack("node", "standalone.toml"))
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.ReplaceAll(string(tmpl), "@DIR@", dir)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "containerd"), "--config", filepath.Join(dir, "config.toml"))
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		// The shims of containers a failed test left; then the state.
		_ = exec.Command("pkill", "-9", "-f", "containerd-shim-runc-v2 -namespace .* -address "+c.Address).Run()
		unmountUnder(dir) // the task root filesystems the killed shims left mounted
		_ = os.RemoveAll(dir)
	})
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(c.Address); err == nil {
			return c
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
	t.Fatalf("containerd did not start:\n%s", b)
	return nil
}

// unmountUnder unmounts what is mounted below dir, deepest first.
func unmountUnder(dir string) {
	b, _ := os.ReadFile("/proc/self/mounts")
	var points []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// Ctr runs ctr against the containerd and returns its output.
func (c *Containerd) Ctr(args ...string) (string, error) {
	return testproc.Run(filepath.Join(c.Bin, "ctr"), append([]string{"--address", c.Address}, args...)...)
}

// Helper builds gantry-helper statically into dir and returns its path.
func Helper(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "gantry-helper")
	build := exec.Command("go", "build", "-trimpath", "-o", p, "./cmd/gantry-helper")
	build.Dir, build.Env = testproc.RepoRoot(), append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gantry-helper: %v\n%s", err, b)
	}
	return p
}

// PushBusybox pushes an image of Debian's static busybox (its applets linked, bash as
// /bin/bash) as ref, with auth (nil: anonymous).
func PushBusybox(t testing.TB, ref string, auth authn.Authenticator) {
	t.Helper()
	box, cfg, err := ociimage.BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	if err := ociimage.PushAs(ref, box, cfg, auth); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}
