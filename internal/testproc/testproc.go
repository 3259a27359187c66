// Package testproc runs the programs that the test harnesses start (build scripts, kubectl) and
// finds the repository they live in, for the packages that start real components in tests.
package testproc

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Run runs a program and returns its standard output; a failure names the command and carries
// its standard error.
func Run(name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// RepoRoot is the repository's root folder, found from this source file's place in it.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Hack is a path below the repository's hack/ folder.
func Hack(parts ...string) string {
	return filepath.Join(append([]string{RepoRoot(), "hack"}, parts...)...)
}
