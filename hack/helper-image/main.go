// Command helper-image builds gantry-helper (cmd/gantry-helper, static) and pushes its image,
// one layer on an empty base, to the registry a worker's --helper-image names, without a
// container engine:
//
//	go run ./hack/helper-image registry.example.com/gantry/gantry-helper:1
//
// Credentials come from the Docker config (~/.docker/config.json), as `docker push` finds them.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gantry-cd/gantry/internal/ociimage"
)

func main() {
	insecure := flag.Bool("insecure", false, "the registry speaks plain HTTP")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/helper-image [--insecure] REGISTRY/REPOSITORY:TAG")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ref := flag.Arg(0)
	dir, err := os.MkdirTemp("", "gantry-helper-image")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "gantry-helper")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/gantry-helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fail(fmt.Errorf("build gantry-helper (run this from the repository's root): %w", err))
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	files := []ociimage.File{{Path: "gantry-helper", Src: bin}}
	if err := ociimage.Push(ref, files, v1.Config{Entrypoint: []string{"/gantry-helper"}}, opts...); err != nil {
		fail(fmt.Errorf("push %s: %w", ref, err))
	}
	fmt.Println("pushed", ref, "- start workers with --helper-image", ref)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "helper-image:", err)
	os.Exit(1)
}
