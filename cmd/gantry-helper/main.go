// Command gantry-helper runs inside the pod of a containerized step group. An init container
// copies it into a volume every step container mounts; each step container's main process is
// `gantry-helper wait`, and the worker runs each step with `gantry-helper run` through the
// Kubernetes exec API, sending the step on stdin and reading its output, exit code and output
// variables back (package activities/container/wire). On a build machine the worker starts
// `gantry-helper supervise` beside each stage's workspace, which runs the stage's steps the
// same way (package activities/container/runner). It stays small and static: it links only
// the standard library.
package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"syscall"

	"github.com/gantry-cd/gantry/activities/container/runner"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gantry-helper install DIR | wait | run | supervise | untar DIR | tar DIR PATH... | reports DIR PATTERN... | build BUILDCTL-ARG...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "install":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper install DIR")
			os.Exit(2)
		}
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper install:", err)
			os.Exit(1)
		}
	case "wait":
		wait()
	case "run":
		os.Exit(runner.Run(os.Stdin, os.Stdout))
	case "supervise":
		os.Exit(runner.Supervise(os.Stdin, os.Stdout))
	case "untar":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper untar DIR")
			os.Exit(2)
		}
		n, err := untar(os.Stdin, os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper untar:", err)
			os.Exit(1)
		}
		fmt.Printf("%d files written to %s\n", n, os.Args[2])
	case "tar":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper tar DIR PATH...")
			os.Exit(2)
		}
		if err := tarPaths(os.Stdout, os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper tar:", err)
			os.Exit(1)
		}
	case "build":
		os.Exit(build(os.Args[2:]))
	case "reports":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper reports DIR PATTERN...")
			os.Exit(2)
		}
		if err := runner.Reports(os.Stdout, os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper reports:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "gantry-helper: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// install copies this binary to DIR/bin and makes DIR/steps, writable by any user the step
// containers run as.
func install(dir string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(dir, "steps")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "steps"), 0o1777); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "bin", ".gantry-helper")
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, self); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "bin", "gantry-helper"))
}

// untar writes a tar stream's files under dir (created), refusing paths that leave it.
func untar(r io.Reader, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return n, fmt.Errorf("%s leaves %s", h.Name, dir)
		}
		target := filepath.Join(dir, name)
		mode := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return n, err
			}
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return n, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return n, err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return n, err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return n, err
			}
			if err := f.Close(); err != nil {
				return n, err
			}
			n++
		}
	}
}

// wait is a step container's main process: it keeps the container alive for the group's
// steps, reaps the processes they leave behind, and ends on SIGTERM.
func wait() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				var ws syscall.WaitStatus
				if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
