//go:build !linux

package promtest

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
