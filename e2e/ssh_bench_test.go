package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/sshtest"
)

// sshBenchArtifact is the package both SSH benchmarks deploy: 4 MiB served over HTTP on
// loopback.
var sshBenchArtifact = bytes.Repeat([]byte("0123456789abcdef"), 1<<18)

// sshBenchHosts starts three sshd hosts, a web server with the package, and the files of a
// pipeline that copies it to each host and checks its digest there.
func sshBenchHosts(b *testing.B) (string, []*sshtest.Server, string) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(sshBenchArtifact) }))
	b.Cleanup(web.Close)
	dir := b.TempDir()
	hosts := sshHosts(b, dir, 3)
	return dir, hosts, web.URL + "/shop-1.0.tgz"
}

// BenchmarkSshDeploy3Hosts: a pipeline whose Command step, on three hosts at once, copies the
// package (fetched by the worker) and runs a script checking its digest there; from start to
// result.
func BenchmarkSshDeploy3Hosts(b *testing.B) {
	dir, _, pkg := sshBenchHosts(b)
	target := b.TempDir()
	file := sshPipeline(b, dir, "{identifier: main, type: CustomArtifact, spec: {version: '"+pkg+"'}}", fmt.Sprintf(
		"                      - {identifier: copy, name: Copy, type: Copy, spec: {sourceType: Artifact, destinationPath: %[1]s/<+instance.hostName>}}\n"+
			"                      - {identifier: check, name: Check, type: Script, spec: {shell: Bash, workingDirectory: %[1]s/<+instance.hostName>, source: {type: Inline, spec: {script: sha256sum shop-1.0.tgz > sum}}}}\n", target))
	p := loadRun(b, file)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		runSucceeds(b, p, 2*time.Minute)
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/deploy")
}

// BenchmarkSshByHand3Hosts: the same by hand with OpenSSH's clients: curl fetches the package,
// then for each host at once scp copies it and ssh runs the check.
func BenchmarkSshByHand3Hosts(b *testing.B) {
	dir, hosts, pkg := sshBenchHosts(b)
	target := b.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(hosts[0].ClientKey), 0o600); err != nil {
		b.Fatal(err)
	}
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			b.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	opts := []string{"-i", key, "-o", "UserKnownHostsFile=" + env.knownHosts, "-o", "BatchMode=yes"}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		local := filepath.Join(dir, "shop-1.0.tgz")
		run("curl", "-fsS", "-o", local, pkg)
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				port, at := strconv.Itoa(h.Port), filepath.Join(target, h.Addr)
				login := h.KeyUser + "@127.0.0.1"
				run("ssh", append(opts, "-p", port, login, "mkdir -p "+at)...)
				run("scp", append(opts, "-q", "-P", port, local, login+":"+at+"/")...)
				run("ssh", append(opts, "-p", port, login, "cd "+at+" && sha256sum shop-1.0.tgz > sum")...)
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/deploy")
}
