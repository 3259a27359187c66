//go:build !linux

package shell

import (
	"errors"
	"syscall"
)

// procAttr starts a shell in its own process group, so a timeout or cancel kills the whole group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// canFork is false: fork servers need Linux's /proc; every step starts its own shell.
const canFork = false

func unreadBytes(int) (int, error) { return 0, errors.New("not supported") }

// pinToOneCPU does nothing: fork servers run on Linux only.
func pinToOneCPU(int) func(int) error { return nil }
