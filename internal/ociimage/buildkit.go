package ociimage

import (
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gantry-cd/gantry/internal/testproc"
)

// BuildKitImage builds BuildKit and runc (hack/buildkit, cached outside the repository) and
// returns the files and configuration of the image BuildAndPush steps run in: the three
// programs, a /tmp, and the host's CA bundle so that the daemon trusts public registries.
func BuildKitImage() ([]File, v1.Config, error) {
	built, err := testproc.Built("buildkit")
	if err != nil {
		return nil, v1.Config{}, err
	}
	bin := filepath.Join(built, "bin")
	files := []File{{Path: "tmp/", Mode: 0o1777}}
	for _, p := range []string{"buildkitd", "buildctl", "runc"} {
		files = append(files, File{Path: "usr/bin/" + p, Src: filepath.Join(bin, p)})
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		files = append(files, File{Path: "etc/ssl/certs/ca-certificates.crt", Src: "/etc/ssl/certs/ca-certificates.crt"})
	}
	return files, v1.Config{Env: []string{"PATH=/usr/bin:/bin"}}, nil
}

// BusyboxImage returns the files and configuration of a small shell image: Debian's static
// busybox with its applets linked, and static bash as /bin/bash.
func BusyboxImage() ([]File, v1.Config, error) {
	applets, err := testproc.Run("/bin/busybox", "--list")
	if err != nil {
		return nil, v1.Config{}, err
	}
	box := []File{{Path: "bin/busybox", Src: "/bin/busybox"}, {Path: "bin/bash", Src: "/bin/bash-static"}, {Path: "tmp/", Mode: 0o1777}}
	for _, a := range strings.Fields(applets) {
		if a != "busybox" && a != "bash" {
			box = append(box, File{Path: "bin/" + a, Link: "busybox"})
		}
	}
	return box, v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}, nil
}
