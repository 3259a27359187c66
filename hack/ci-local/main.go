// Command ci-local serves what examples/ci-local needs beside a build machine, on a machine
// without a network to the internet (hack/run-ci-local.sh starts it):
//
//   - a container registry, on every address so that the stage's containers reach it through
//     their network's gateway, holding the images the pipeline's steps pull: a busybox shell,
//     the Redis-compatible store of the Background step (hack/ci-local/kv) and BuildKit's
//     (hack/buildkit), which BuildAndPush steps build in;
//   - a Git server (Debian's git http-backend behind basic auth) with the example's app as
//     repository app.git, branch main.
//
// It prints "ready" when both serve, and runs until it is stopped.
package main

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gantry-cd/gantry/internal/ociimage"
)

func main() {
	state := flag.String("state", ".gantry/ci-local", "folder for the Git repository")
	regAddr := flag.String("registry", "0.0.0.0:15050", "the registry's address")
	gitAddr := flag.String("git", "127.0.0.1:15051", "the Git server's address")
	source := flag.String("source", "examples/ci-local/app", "the app's source, committed as app.git")
	kv := flag.String("kv", "", "the kv-server binary (hack/ci-local/kv/build.sh)")
	flag.Parse()
	password := os.Getenv("CI_LOCAL_GIT_PASSWORD")
	if *kv == "" || password == "" {
		log.Fatal("ci-local needs -kv and CI_LOCAL_GIT_PASSWORD")
	}
	if err := serve(*regAddr, registry.New(registry.Logger(log.New(discard{}, "", 0)))); err != nil {
		log.Fatalf("registry: %v", err)
	}
	_, port, _ := net.SplitHostPort(*regAddr)
	local := "127.0.0.1:" + port
	if err := pushImages(local, *kv); err != nil {
		log.Fatal(err)
	}
	root, err := repository(*state, *source)
	if err != nil {
		log.Fatalf("git repository: %v", err)
	}
	if err := serve(*gitAddr, gitServer(root, "ci", password)); err != nil {
		log.Fatalf("git server: %v", err)
	}
	fmt.Println("ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// serve serves h on addr in the background.
func serve(addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { log.Fatal(http.Serve(l, h)) }()
	return nil
}

// pushImages pushes the images the pipeline pulls to the registry at reg.
func pushImages(reg, kv string) error {
	box, boxCfg, err := ociimage.BusyboxImage()
	if err != nil {
		return fmt.Errorf("busybox image (Debian's busybox-static): %w", err)
	}
	if err := ociimage.Push(reg+"/tools/busybox:1", box, boxCfg); err != nil {
		return err
	}
	store := append(box, ociimage.File{Path: "usr/local/bin/kv-server", Src: kv, Mode: 0o755})
	storeCfg := v1.Config{Entrypoint: []string{"/usr/local/bin/kv-server"}, Cmd: []string{"-listen", ":6379"}, Env: boxCfg.Env}
	if err := ociimage.Push(reg+"/tools/kv:1", store, storeCfg); err != nil {
		return err
	}
	kit, kitCfg, err := ociimage.BuildKitImage()
	if err != nil {
		return fmt.Errorf("BuildKit image (hack/buildkit): %w", err)
	}
	return ociimage.Push(reg+"/tools/buildkit:1", kit, kitCfg)
}

// repository makes state/git/app.git from the app's source, one commit on main.
func repository(state, source string) (string, error) {
	root, err := filepath.Abs(filepath.Join(state, "git"))
	if err != nil {
		return "", err
	}
	work := filepath.Join(state, "app-source")
	for _, d := range []string{root, work} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
	}
	steps := [][]string{
		{"cp", "-r", source, work},
		{"git", "-C", work, "init", "-q", "-b", "main"},
		{"git", "-C", work, "add", "."},
		{"git", "-C", work, "-c", "user.name=CI Local", "-c", "user.email=ci@localhost", "commit", "-q", "-m", "the app"},
		{"git", "clone", "-q", "--bare", work, filepath.Join(root, "app.git")},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("%v: %v\n%s", s, err, out)
		}
	}
	return root, os.RemoveAll(work)
}

// gitServer serves the repositories under root with git http-backend, behind basic auth.
func gitServer(root, user, password string) http.Handler {
	backend := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="ci-local"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		backend.ServeHTTP(w, r)
	})
}
