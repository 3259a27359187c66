package shell

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
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

// bodyPipe returns the read end of a pipe holding body and nothing more. It is a bare
// descriptor: the worker only writes the body before the subshell reads it and asks how much
// it left, so the pipe needs none of the poller's bookkeeping (four system calls a step).
func bodyPipe(body string) (int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return -1, err
	}
	n, err := unix.Write(p[1], []byte(body))
	_ = unix.Close(p[1])
	if err != nil || n < len(body) {
		// A pipe can be smaller than the 64 KiB a body may take when the user's pipes hold
		// more than the system allows one user (fs.pipe-user-pages-soft).
		_ = unix.Close(p[0])
		return -1, fmt.Errorf("%w (%d of %d bytes written: %v)", errBodyTooBig, n, len(body), err)
	}
	return p[0], nil
}

// emptyWorkspace reports whether dir is still the empty, private directory MkdirTemp made.
// It costs four system calls and no allocation: it runs after every step.
func emptyWorkspace(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o700 {
		return false
	}
	var buf [512]byte
	n, err := unix.Getdents(fd, buf[:])
	if err != nil {
		return false
	}
	for off := 0; off < n; {
		// struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name (NUL-terminated)
		reclen := int(buf[off+16]) | int(buf[off+17])<<8
		name := buf[off+19 : off+reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if string(name) != "." && string(name) != ".." {
			return false
		}
		off += reclen
	}
	return n > 0
}

// groupRuns reports whether a process of group pgid can still run: one that is neither gone
// nor a zombie. kill(-pgid, 0) alone cannot tell, since a killed process stays in its group
// until its parent reaps it; so the processes found are read from /proc.
func groupRuns(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var buf [512]byte
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		fd, err := unix.Open("/proc/"+n+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // ended meanwhile
		}
		k, _ := unix.Read(fd, buf[:])
		_ = unix.Close(fd)
		if k <= 0 {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		stat := buf[:k]
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
