package shell

import "syscall"

// procAttr starts bash in its own process group (so a timeout or cancel kills the whole group)
// and kills it if the worker dies, so a lost worker leaves no script running behind its back.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
