// Package topotest starts Gantry's production topology as processes for tests: PostgreSQL,
// `gantry temporal`, two `gantry worker`s and `gantry server`, through hack/topology/topology.sh
// on free ports, and stops, kills and restarts its components.
package topotest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// Workers are the names of the topology's worker processes.
var Workers = []string{"worker-1", "worker-2"}

// Topology is a running topology.
type Topology struct {
	Dir     string // state and logs (DIR/<component>.log)
	Address string // Temporal frontend host:port
	API     string // http://host:port of gantry server
	Gantry  string // the gantry binary the processes run
	script  string
	env     []string
}

// Build compiles the gantry binary into dir and returns its path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "gantry")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gantry")
	cmd.Dir = testproc.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gantry: %v\n%s", err, out)
	}
	return bin, nil
}

// Start starts the topology with the gantry binary bin; its state lives in dir. env (NAME=VALUE)
// is added to every component's environment.
func Start(dir, bin string, env ...string) (*Topology, error) {
	// Every port below the kernel's ephemeral range: a component restarted late in a test
	// binds its port again, and a port from that range could meanwhile be the source port of
	// one of the many connections the topology opens (PostgreSQL's pool, gRPC).
	// Temporal takes 8 from its base, then PostgreSQL, the API and the two workers' metrics.
	base, err := freeport.Consecutive(12)
	if err != nil {
		return nil, err
	}
	pg, api, metrics := base+8, base+9, base+10
	t := &Topology{Dir: dir, Gantry: bin, script: testproc.Hack("topology", "topology.sh"),
		Address: "127.0.0.1:" + strconv.Itoa(base), API: "http://127.0.0.1:" + strconv.Itoa(api)}
	cmd := exec.Command(t.script, "up", dir)
	cmd.Env = append(os.Environ(), "GANTRY="+bin, "TEMPORAL_PORT="+strconv.Itoa(base), "PG_PORT="+strconv.Itoa(pg),
		"API_PORT="+strconv.Itoa(api), "METRICS_PORT="+strconv.Itoa(metrics))
	cmd.Env = append(cmd.Env, env...)
	t.env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Stop()
		return nil, fmt.Errorf("start topology: %v\n%s", err, out)
	}
	return t, nil
}

// Stop stops every process and removes PostgreSQL's data.
func (t *Topology) Stop() { _ = t.run("down", t.Dir) }

// StartComponent starts a stopped component (postgres, temporal, worker-1, worker-2, server)
// and waits until it serves.
func (t *Topology) StartComponent(name string) error { return t.run("start", name, t.Dir) }

// StopComponent stops a component with sig (SIGTERM: graceful; SIGKILL: a crash) and waits
// until its process is gone.
func (t *Topology) StopComponent(name string, sig syscall.Signal) error {
	return t.run("stop", name, t.Dir, strconv.Itoa(int(sig)))
}

// PID is the process id of a running component.
func (t *Topology) PID(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(t.Dir, name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("%s is not running: %w", name, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Log is a component's log so far.
func (t *Topology) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(t.Dir, name+".log"))
	return string(b)
}

func (t *Topology) run(args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(t.script, args...)
	cmd.Env = append(os.Environ(), t.env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("topology.sh %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}
