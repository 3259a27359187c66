package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A process group is recorded with its leader's start time: a leader gone and its number
// reused by another process must not be mistaken for it.

// RecordGroup writes the process group led by pid to path.
func RecordGroup(path string, pid int) error {
	return os.WriteFile(path, fmt.Appendf(nil, "%d %s\n", pid, startTime(pid)), 0o600)
}

// KillGroup ends the process group recorded at path: SIGTERM, then SIGKILL after grace for
// what is left. It reports whether the group was still there. A leader whose number now
// belongs to another process (another start time) is left alone.
func KillGroup(path string, grace time.Duration) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false, nil
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return false, fmt.Errorf("%s: no process group in %q", path, b)
	}
	if now := startTime(pid); now != "" && len(f) > 1 && now != f[1] {
		return false, nil // the number was reused: the group we started is gone
	}
	// With its leader gone, the group can only be ours: the kernel does not reuse a number
	// that still names a process group.
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		return false, nil // no such group
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pid, 0) != nil {
			return true, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return true, nil
}

// startTime is a process's start time in clock ticks since boot (field 22 of its stat), ""
// when it does not exist.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces and parentheses: count from its end.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
