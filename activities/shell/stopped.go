package shell

import (
	"fmt"
	"os"
	"time"
)

// stopWait bounds how long a killed step waits for its processes to be gone. SIGKILL ends a
// process at once unless it sits in the kernel (a hung network file system); past the bound the
// step reports what is left rather than wait for ever.
const stopWait = 10 * time.Second

// awaitStopped waits until no process of the groups can run any more: a step that was killed
// returns only then, so that whatever its stage held (a Queue key, an infrastructure) is
// released after it stopped, never while it still runs. What is still running past stopWait
// is said in the step's output.
func awaitStopped(out *os.File, groups ...int) {
	if err := groupsGone(groups); err != nil {
		_, _ = out.WriteString("gantry: " + err.Error() + "\n")
	}
}

func groupsGone(groups []int) error {
	deadline := time.Now().Add(stopWait)
	for _, g := range groups {
		if g <= 0 {
			continue
		}
		for pause := time.Millisecond; groupRuns(g); pause = min(2*pause, 50*time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process group %d still runs %s after it was killed (a process stuck in the kernel?); "+
					"the step is reported stopped, check the worker's host", g, stopWait)
			}
			time.Sleep(pause)
		}
	}
	return nil
}
