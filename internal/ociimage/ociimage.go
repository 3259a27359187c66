// Package ociimage builds one-layer linux images from files on disk and pushes them to a
// registry, without a container engine: gantry-helper's image, and the test node's images.
package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one entry of the layer: a file copied from Src, a symlink to Link, or a directory
// (Path ends with "/").
type File struct {
	Path, Src, Link string
	Mode            int64
}

// Push writes an image of one layer holding files, with cfg, as ref (name.Insecure among opts
// for a plain-HTTP registry; loopback ones are plain HTTP anyway). Credentials come from the
// Docker config ($DOCKER_CONFIG or ~/.docker/config.json), as `docker push` finds them.
func Push(ref string, files []File, cfg v1.Config, opts ...name.Option) error {
	return PushAs(ref, files, cfg, nil, opts...)
}

// PushAs is Push with the given credentials (nil: the Docker config's).
func PushAs(ref string, files []File, cfg v1.Config, auth authn.Authenticator, opts ...name.Option) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Path, Mode: 0o755}
		switch {
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		case strings.HasSuffix(f.Path, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, f.Mode
		default:
			b, err := os.ReadFile(f.Src)
			if err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(b); err != nil {
				return err
			}
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", runtime.GOARCH, cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return err
	}
	if auth != nil {
		return remote.Write(r, img, remote.WithAuth(auth))
	}
	return remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain))
}
