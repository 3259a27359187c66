// Command buildkit-image builds BuildKit and runc from the Go module proxy (hack/buildkit) and
// pushes the image BuildAndPush steps run in, one layer on an empty base, to the registry a
// worker's --buildkit-image names, without a container engine:
//
//	go run ./hack/buildkit-image registry.example.com/gantry/gantry-buildkit:1
//
// Credentials come from the Docker config (~/.docker/config.json), as `docker push` finds them.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gantry-cd/gantry/internal/ociimage"
)

func main() {
	insecure := flag.Bool("insecure", false, "the registry speaks plain HTTP")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/buildkit-image [--insecure] REGISTRY/REPOSITORY:TAG")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ref := flag.Arg(0)
	files, cfg, err := ociimage.BuildKitImage()
	if err != nil {
		fail(fmt.Errorf("build BuildKit (run this from the repository's root): %w", err))
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	if err := ociimage.Push(ref, files, cfg, opts...); err != nil {
		fail(fmt.Errorf("push %s: %w", ref, err))
	}
	fmt.Println("pushed", ref, "- start workers with --buildkit-image", ref)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "buildkit-image:", err)
	os.Exit(1)
}
