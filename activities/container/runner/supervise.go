package runner

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Supervise serves the steps of one build-machine workspace, so that a step costs a
// connection instead of a process start: it listens on a unix socket in a folder of its own
// (mode 700), writes the socket's path as its first stdout line, and runs each connection's
// request as Run does, the connection its stdin and stdout (closing it stops the step). When
// its own stdin closes (the worker is done with the workspace, or died), it ends the process
// groups recorded in GANTRY_HELPER_DIR/groups, its steps' and background programs', and
// returns.
func Supervise(stdin io.Reader, out io.Writer) int {
	dir, err := os.MkdirTemp("", "gantry-steps-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-helper supervise:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-helper supervise:", err)
		return 1
	}
	fmt.Fprintln(out, sock)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				Run(c, c)
			}()
		}
	}()
	_, _ = io.Copy(io.Discard, stdin)
	l.Close()
	groups, _ := filepath.Glob(filepath.Join(helperDir(), "groups", "*"))
	for _, g := range groups {
		_, _ = KillGroup(g, 5*time.Second)
	}
	return 0
}
