// Command helper-image builds one of the images Gantry's pods run and pushes it, one layer on
// an empty base, to a registry the clusters pull from, without a container engine: by default
// gantry-helper's (cmd/gantry-helper, static), which a worker's --helper-image names; with
// --buildkit, BuildKit's and runc's (hack/buildkit), which BuildAndPush steps build in and a
// worker's --buildkit-image names:
//
//	go run ./hack/helper-image registry.example.com/gantry/gantry-helper:1
//	go run ./hack/helper-image --buildkit registry.example.com/gantry/gantry-buildkit:1
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
	buildkit := flag.Bool("buildkit", false, "push the BuildKit image of BuildAndPush steps instead of gantry-helper's")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/helper-image [--insecure] [--buildkit] REGISTRY/REPOSITORY:TAG")
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
	var files []ociimage.File
	cfg, flagName := v1.Config{Entrypoint: []string{"/gantry-helper"}}, "--helper-image"
	if *buildkit {
		if files, cfg, err = ociimage.BuildKitImage(); err != nil {
			fail(fmt.Errorf("build BuildKit (run this from the repository's root): %w", err))
		}
		flagName = "--buildkit-image"
	} else {
		files = helperImage(dir)
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	if err := ociimage.Push(ref, files, cfg, opts...); err != nil {
		fail(fmt.Errorf("push %s: %w", ref, err))
	}
	fmt.Println("pushed", ref, "- start workers with", flagName, ref)
}

// helperImage builds gantry-helper into dir and returns its image's files.
func helperImage(dir string) []ociimage.File {
	bin := filepath.Join(dir, "gantry-helper")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/gantry-helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fail(fmt.Errorf("build gantry-helper (run this from the repository's root): %w", err))
	}
	return []ociimage.File{{Path: "gantry-helper", Src: bin}}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "helper-image:", err)
	os.Exit(1)
}
