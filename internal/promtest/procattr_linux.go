package promtest

import "syscall"

// procAttr makes the server die with the test process: a test killed before Stop must not
// leave it behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
