// Package logs stores step output line by line, one file per step and execution, so that
// `gantry logs` can print it and `gantry run` can stream it while the step runs.
package logs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Store keeps logs under Dir/<execution>/<step path>.log.
type Store struct{ Dir string }

// Path returns the log file of a step.
func (s Store) Path(executionID, stepPath string) string {
	return filepath.Join(s.Dir, safe(executionID), safe(stepPath)+".log")
}

// safe keeps a name from escaping the log directory.
func safe(s string) string {
	s = strings.ReplaceAll(s, "/", "_")
	s = strings.ReplaceAll(s, string(os.PathSeparator), "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// Writer is an open step log. Write may be called from several goroutines.
type Writer struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
	// A lazy writer creates its file, starting with header, at the first line.
	path, header string
	err          error
}

// Open opens a step's log for appending (a retried attempt continues the same file).
func (s Store) Open(executionID, stepPath string) (*Writer, error) {
	w, err := s.OpenLazy(executionID, stepPath, "")
	if err == nil && w.path != "" {
		w.mu.Lock()
		w.open()
		w.mu.Unlock()
		err = w.err
	}
	return w, err
}

// OpenLazy prepares a step's log but creates its file only when the first line comes, with
// header before it: a step that prints nothing costs no file. Check Err after the step.
func (s Store) OpenLazy(executionID, stepPath, header string) (*Writer, error) {
	if s.Dir == "" {
		return &Writer{}, nil
	}
	p := s.Path(executionID, stepPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	return &Writer{path: p, header: header}, nil
}

// open creates or appends to the file; w.mu is held.
func (w *Writer) open() {
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	w.path = ""
	if err != nil {
		w.err = fmt.Errorf("open step log: %w", err)
		return
	}
	w.f, w.w = f, bufio.NewWriter(f)
	if w.header != "" {
		_, _ = w.w.WriteString(w.header + "\n")
	}
}

// Line appends one line and flushes it, so readers see output as it happens.
func (w *Writer) Line(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.path != "" {
		w.open()
	}
	if w.f == nil {
		return
	}
	_, _ = w.w.WriteString(s)
	_ = w.w.WriteByte('\n')
	_ = w.w.Flush()
}

// Err reports a log file that could not be created: the lines written since are lost.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the log.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	_ = w.w.Flush()
	return w.f.Close()
}

// Copy writes a step's log to out; a step that wrote nothing has an empty log.
func (s Store) Copy(out io.Writer, executionID, stepPath string) error {
	f, err := os.Open(s.Path(executionID, stepPath))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(out, f)
	return err
}
