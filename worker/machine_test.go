package worker

import (
	"strings"
	"testing"
)

// Containers on a build machine run gantry-helper in any image: only a statically linked one
// will do, and a dynamic one or gantry itself is refused at start, naming how to get one.
func TestStaticHelper(t *testing.T) {
	if p, err := staticHelper([]string{"/bin/busybox"}); err != nil || p != "/bin/busybox" {
		t.Errorf("Debian's static busybox: %q %v", p, err)
	}
	if _, err := staticHelper([]string{"/bin/ls"}); err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic program: %v", err)
	}
	if _, err := staticHelper([]string{"/usr/local/bin/gantry", StepHelperArg}); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("gantry playing the helper: %v", err)
	}
}
