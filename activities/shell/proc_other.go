//go:build !linux

package shell

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// procAttr starts a shell in its own process group, so a timeout or cancel kills the whole group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// canFork is false: fork servers need Linux's /proc; every step starts its own shell.
const canFork = false

func unreadBytes(int) (int, error) { return 0, errors.New("not supported") }

// pinToOneCPU does nothing: fork servers run on Linux only.
func pinToOneCPU(int) func(int) error { return nil }

func bodyPipe(string) (int, error) { return -1, errors.New("not supported") }

// emptyWorkspace reports whether dir is still the empty, private directory MkdirTemp made.
func emptyWorkspace(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Readdirnames(1)
	return err == io.EOF
}

// groupRuns reports whether a process of group pgid is left (zombies not told apart).
func groupRuns(pgid int) bool { return syscall.Kill(-pgid, 0) != syscall.ESRCH }
