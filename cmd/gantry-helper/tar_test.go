package main

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/container/runner"
)

// A cache round trip: tar writes the paths under their absolute names, untar of / puts them
// back, files, directories and modes included; reports lists only the matching files.
func TestTarRoundTripAndReports(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "deps", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "deps", "lib", "a.txt"), []byte("built\n"), 0o640)
	os.WriteFile(filepath.Join(src, "unit.xml"), []byte("<testsuite/>"), 0o644)
	var archive bytes.Buffer
	if err := tarPaths(&archive, src, []string{"deps"}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	// untar / would write to the real paths; unpack below dst the names tar wrote.
	if _, err := untar(bytes.NewReader(archive.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(dst, strings.TrimPrefix(src, "/"), "deps", "lib", "a.txt")
	if b, err := os.ReadFile(restored); err != nil || string(b) != "built\n" {
		t.Fatalf("restored %q %v", b, err)
	}
	if st, _ := os.Stat(restored); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode())
	}
	var listed bytes.Buffer
	if err := runner.Reports(&listed, src, []string{"*.xml", "**/*.md"}); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&listed)
	var names []string
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	if len(names) != 1 || names[0] != filepath.Join(src, "unit.xml") {
		t.Errorf("reports listed %v", names)
	}
}
