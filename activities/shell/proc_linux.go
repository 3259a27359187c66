package shell

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr starts a shell in its own process group (so a timeout or cancel kills the whole group)
// and kills it if the worker dies, so a lost worker leaves no script running behind its back.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// canFork says fork servers work here: their subshells open pipes through /proc.
const canFork = true

// unreadBytes returns how many bytes wait in a pipe.
func unreadBytes(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }
