//go:build !linux

package testproc

import "syscall"

// DieWithTest is nil where the kernel cannot tie a process to its parent's life.
func DieWithTest() *syscall.SysProcAttr { return nil }
