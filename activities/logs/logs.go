// Package logs stores step output line by line, one file per step and execution, so that
// `gantry logs` can print it and `gantry run` can stream it while the step runs.
package logs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Store keeps logs under Dir/<execution>/<step path>.log. With Remote, every attempt's log is
// also shipped to a bucket when the attempt ends, so any process can read it.
type Store struct {
	Dir    string
	Remote *Remote
}

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
	// Shipping: the attempt's bytes are [start, end) of the file, opened at opened.
	remote      *Remote
	file        string
	executionID string
	stepPath    string
	start, end  int64
	opened      int64
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
	return &Writer{path: p, header: header, remote: s.Remote, file: p, executionID: executionID, stepPath: stepPath}, nil
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
	if w.remote != nil {
		if st, err := f.Stat(); err == nil {
			w.start, w.end = st.Size(), st.Size()
		}
		w.opened = time.Now().UnixNano()
	}
	if w.header != "" {
		w.write(w.header)
	}
}

// write buffers one line; w.mu is held and the file is open.
func (w *Writer) write(s string) {
	n, _ := w.w.WriteString(s)
	if w.w.WriteByte('\n') == nil {
		n++
	}
	w.end += int64(n)
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
	w.write(s)
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
	err := w.f.Close()
	w.f = nil
	if w.remote != nil && w.end > w.start {
		w.remote.ship(segment{file: w.file, executionID: w.executionID, stepPath: w.stepPath, start: w.start, end: w.end, opened: w.opened})
	}
	return err
}

// Copy writes a step's log to out; a step that wrote nothing has an empty log. With Remote,
// the log is read from the bucket (every attempt, whichever worker ran it), or from the local
// file while the bucket has none of it yet (a step still running on this machine).
func (s Store) Copy(ctx context.Context, out io.Writer, executionID, stepPath string) error {
	return s.CopyFrom(ctx, out, executionID, stepPath, 0)
}

// CopyFrom writes a step's log from byte offset from on, read as Copy reads it: a page
// following a running step asks only for what it has not shown yet. An offset past the end
// writes nothing.
func (s Store) CopyFrom(ctx context.Context, out io.Writer, executionID, stepPath string, from int64) error {
	if s.Remote != nil {
		found, err := s.Remote.CopyFrom(ctx, out, executionID, stepPath, from)
		if err != nil || found {
			return err
		}
	}
	f, err := os.Open(s.Path(executionID, stepPath))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(out, f)
	return err
}

// Exists reports whether a step has a log, here or in the bucket.
func (s Store) Exists(ctx context.Context, executionID, stepPath string) (bool, error) {
	if _, err := os.Stat(s.Path(executionID, stepPath)); err == nil {
		return true, nil
	}
	if s.Remote == nil {
		return false, nil
	}
	segs, err := s.Remote.pieces(ctx, executionID, stepPath, nil)
	return len(segs) > 0, err
}

// Lines is an io.Writer that sends output to a step log line by line, each masked, and
// remembers the last non-empty line (for a failure's message). Safe for concurrent writers (a
// command's stdout and stderr).
type Lines struct {
	Log  *Writer
	Mask interface{ Apply(string) string }

	mu   sync.Mutex
	buf  []byte
	last string
}

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.emit(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

// Line writes one line.
func (l *Lines) Line(s string) { _, _ = l.Write([]byte(s + "\n")) }

// Flush writes what is left of an unfinished last line.
func (l *Lines) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(string(l.buf))
		l.buf = nil
	}
}

// Last is the last non-empty line written.
func (l *Lines) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *Lines) emit(s string) {
	s = strings.TrimRight(s, "\r")
	if l.Mask != nil {
		s = l.Mask.Apply(s)
	}
	l.Log.Line(s)
	if strings.TrimSpace(s) != "" {
		l.last = s
	}
}
