//go:build !linux

package s3test

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
