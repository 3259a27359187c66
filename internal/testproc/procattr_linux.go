package testproc

import "syscall"

// DieWithTest makes a server a test starts die with the test process: a test killed before it
// stops the server must not leave it behind.
func DieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
