package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gantry-cd/gantry/activities/container/wire"
)

// build runs a BuildAndPush step inside the BuildKit image's container: it starts buildkitd
// for this build only, runs `buildctl build` with args, and writes the pushed image's digest
// as the step's output variable. Credentials live in a private directory removed at the end.
func build(args []string) int {
	tmp, err := os.MkdirTemp("", "gantry-build")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-helper build:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "gantry-helper build:", err)
		return 1
	}
	cfg, auth, env, err := buildFiles(tmp)
	if err != nil {
		return fail(err)
	}
	sock := filepath.Join(tmp, "buildkitd.sock")
	logPath := filepath.Join(tmp, "buildkitd.log")
	stop, err := startBuildkitd(sock, cfg, logPath, env)
	if err != nil {
		return fail(err)
	}
	defer stop()
	meta := filepath.Join(tmp, "metadata.json")
	client := exec.Command(lookTool("buildctl"), append([]string{"--addr", "unix://" + sock, "build", "--progress", "plain", "--metadata-file", meta}, args...)...)
	client.Env = append(env, "DOCKER_CONFIG="+auth)
	client.Stdout, client.Stderr = os.Stdout, os.Stdout
	if err := client.Run(); err != nil {
		if b, _ := os.ReadFile(logPath); len(b) > 0 && client.ProcessState == nil {
			fmt.Fprintf(os.Stderr, "buildkitd's log:\n%s\n", b)
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return fail(err)
	}
	var md struct {
		Digest string `json:"containerimage.digest"`
		Name   string `json:"image.name"`
	}
	if b, err := os.ReadFile(meta); err != nil || json.Unmarshal(b, &md) != nil || md.Digest == "" {
		return fail(fmt.Errorf("buildctl wrote no image digest (%v)", err))
	}
	fmt.Printf("pushed %s with digest %s\n", md.Name, md.Digest)
	if dir := os.Getenv("GANTRY_STEP_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "outputs"), []byte(md.Digest+"\x00"), 0o600); err != nil {
			return fail(err)
		}
	}
	return 0
}

// buildFiles writes buildkitd's configuration and the registry credentials from the step's
// environment into tmp, and returns the environment without them.
func buildFiles(tmp string) (cfg, auth string, env []string, err error) {
	cfg = filepath.Join(tmp, "buildkitd.toml")
	if err := os.WriteFile(cfg, []byte(os.Getenv(wire.BuildConfigEnv)), 0o600); err != nil {
		return "", "", nil, err
	}
	auth = filepath.Join(tmp, "docker")
	if err := os.MkdirAll(auth, 0o700); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(filepath.Join(auth, "config.json"), []byte(os.Getenv(wire.BuildAuthEnv)), 0o600); err != nil {
		return "", "", nil, err
	}
	env = []string{} // never nil: a nil Env would hand the daemon the credentials
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, wire.BuildConfigEnv+"=") && !strings.HasPrefix(kv, wire.BuildAuthEnv+"=") {
			env = append(env, kv)
		}
	}
	return cfg, auth, env, nil
}

// startBuildkitd starts buildkitd for one build on sock, logging to logPath, and returns once
// it accepts connections; stop ends it (its whole process group).
func startBuildkitd(sock, cfg, logPath string, env []string) (stop func(), err error) {
	daemon := exec.Command(lookTool("buildkitd"), "--root", filepath.Join(os.TempDir(), "buildkit"), "--addr", "unix://"+sock,
		"--config", cfg, "--oci-worker-snapshotter", "native", "--oci-worker-net", "host", "--containerd-worker=false")
	daemon.Env = env
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	daemon.Stdout, daemon.Stderr = logf, logf
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := daemon.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start buildkitd: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = daemon.Wait(); close(exited) }()
	stop = func() {
		_ = syscall.Kill(-daemon.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL)
		}
		logf.Close()
	}
	if err := awaitSocket(sock, exited, 60*time.Second); err != nil {
		stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%v; buildkitd's log:\n%s", err, b)
	}
	return stop, nil
}

// awaitSocket waits until buildkitd accepts connections, or exits, or d passes.
func awaitSocket(sock string, exited <-chan struct{}, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("buildkitd exited at start")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("buildkitd did not listen within %s", d)
}

// lookTool finds one of the BuildKit image's programs.
func lookTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/bin/" + name
}
