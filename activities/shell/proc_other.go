//go:build !linux

package shell

import "syscall"

// procAttr starts bash in its own process group, so a timeout or cancel kills the whole group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
