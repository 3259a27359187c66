package logs

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/objstore"
)

// Remote ships step logs to a bucket and reads them back. Each attempt of a step is shipped when
// it ends, in the background (a step never waits for the bucket): as the object
// <execution>/<step path>/<opened, ns>-<log directory id>.log, or, when several small attempts
// of an execution end within bundleWindow, as entries of one tar object
// <execution>/~bundles/<opened>-<id>.tar. Reading a step's log gathers its attempts from both
// and joins them in order, so retries run by different workers read as one log.
//
// An attempt whose shipping was cut short (the process was killed) is shipped when a process
// next starts on the same log directory: Start compares each recently written log file with
// what the bucket holds of it.
type Remote struct {
	Bucket *objstore.Bucket
	Log    *zap.Logger

	id      string // this log directory's id: keys from different directories never collide
	dir     string
	queue   chan segment
	pending sync.WaitGroup
	once    sync.Once
	done    chan struct{}
	lock    *os.File
}

// segment is one attempt's bytes of a local log file.
type segment struct {
	file, executionID, stepPath string
	start, end, opened          int64
}

// shipAttempts bounds the tries of one segment; the last failure is logged.
const shipAttempts = 8

// stampFile records when every log written before it had been shipped.
const stampFile = ".shipped"

// Start prepares dir's id, ships what earlier processes on dir left unshipped, and starts the
// shipper. Call Stop to ship what is queued before the process exits.
func (r *Remote) Start(ctx context.Context, dir string) error {
	if r.Log == nil {
		r.Log = zap.NewNop()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create log directory: %w", err)
	}
	id, err := directoryID(dir)
	if err != nil {
		return err
	}
	r.id, r.dir = id, dir
	r.queue, r.done = make(chan segment, 4096), make(chan struct{})
	go r.run()
	// Another live process shipping from dir may be mid-attempt: its files are not leftovers.
	// Each process holds the lock shared; only one that finds none holding it catches up.
	lock, err := os.OpenFile(filepath.Join(dir, ".ship-lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("log directory lock: %w", err)
	}
	r.lock = lock
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		r.catchUp(ctx)
	}
	_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_SH)
	return nil
}

// directoryID reads (or creates) dir/.id.
func directoryID(dir string) (string, error) {
	p := filepath.Join(dir, ".id")
	if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	tmp := p + ".tmp" + id
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("log directory id: %w", err)
	}
	// Two processes starting on one directory agree on the first id written.
	if err := os.Link(tmp, p); err != nil && !errors.Is(err, fs.ErrExist) {
		os.Remove(tmp)
		return "", fmt.Errorf("log directory id: %w", err)
	}
	os.Remove(tmp)
	b2, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("log directory id: %w", err)
	}
	return strings.TrimSpace(string(b2)), nil
}

// ship queues a closed attempt. When the queue is full the caller waits: logs are not dropped.
func (r *Remote) ship(s segment) {
	if r.queue == nil {
		return // not started: local logs only
	}
	r.pending.Add(1)
	r.queue <- s
}

// Small attempts that end close together are shipped as one bundle object per execution: a
// PUT per short step would cost more than the step (on S3 and, more so, on a server sharing
// the machine). An attempt larger than bundleMaxSegment is an object of its own.
const (
	bundleWindow     = 100 * time.Millisecond
	bundleMaxBytes   = 1 << 20
	bundleMaxSegment = 64 << 10
	bundleFolder     = "~bundles" // ~ is in no step path
)

func (r *Remote) run() {
	for s := range r.queue {
		batch := []segment{s}
		size := s.end - s.start
		deadline := time.NewTimer(bundleWindow)
	collect:
		for size < bundleMaxBytes {
			select {
			case next, ok := <-r.queue:
				if !ok {
					break collect
				}
				batch = append(batch, next)
				size += next.end - next.start
			case <-deadline.C:
				break collect
			}
		}
		deadline.Stop()
		r.flush(batch)
		for range batch {
			r.pending.Done()
		}
	}
	close(r.done)
}

// flush ships a batch: per execution, its small attempts as one bundle (or alone when it is
// the only one), its large ones one by one.
func (r *Remote) flush(batch []segment) {
	byExec := map[string][]segment{}
	var order []string
	for _, s := range batch {
		if s.end-s.start > bundleMaxSegment {
			r.putOne(s)
			continue
		}
		if _, ok := byExec[s.executionID]; !ok {
			order = append(order, s.executionID)
		}
		byExec[s.executionID] = append(byExec[s.executionID], s)
	}
	for _, exec := range order {
		if segs := byExec[exec]; len(segs) == 1 {
			r.putOne(segs[0])
		} else {
			r.putBundle(exec, segs)
		}
	}
}

func (r *Remote) putOne(s segment) {
	key := r.key(s.executionID, s.stepPath, s.opened)
	r.put(key, func() ([]byte, error) { return readRange(s.file, s.start, s.end) }, s.executionID, s.stepPath)
}

// putBundle writes segs (of one execution) as a tar of <step>/<opened>.log entries.
func (r *Remote) putBundle(exec string, segs []segment) {
	key := fmt.Sprintf("%s/%s/%020d-%s.tar", safe(exec), bundleFolder, segs[0].opened, r.id)
	steps := make([]string, 0, len(segs))
	for _, s := range segs {
		steps = append(steps, s.stepPath)
	}
	r.put(key, func() ([]byte, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, s := range segs {
			body, err := readRange(s.file, s.start, s.end)
			if err != nil {
				continue // the file is gone: ship the others
			}
			name := fmt.Sprintf("%s/%020d.log", safe(s.stepPath), s.opened)
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			if _, err := tw.Write(body); err != nil {
				return nil, err
			}
		}
		err := tw.Close()
		return buf.Bytes(), err
	}, exec, strings.Join(steps, ","))
}

// put writes key with what body returns, retrying; a last failure is logged.
func (r *Remote) put(key string, body func() ([]byte, error), exec, steps string) {
	var err error
	for try := 0; try < shipAttempts; try++ {
		if try > 0 {
			time.Sleep(time.Duration(1<<min(try, 6)) * 100 * time.Millisecond)
		}
		var b []byte
		if b, err = body(); err != nil {
			break // the file is gone: nothing to retry
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = r.Bucket.Put(ctx, key, b)
		cancel()
		if err == nil {
			return
		}
	}
	r.Log.Error("step logs were not shipped to the log bucket; they stay on this worker",
		zap.String("execution", exec), zap.String("steps", steps), zap.String("dir", r.dir),
		zap.String("object", r.Bucket.URL(key)), zap.Error(err))
}

// Stop ships what is queued, waiting at most until ctx ends, and records the time for the next
// start's catch-up.
func (r *Remote) Stop(ctx context.Context) {
	if r.queue == nil {
		return
	}
	r.once.Do(func() {
		began := time.Now()
		idle := make(chan struct{})
		go func() { r.pending.Wait(); close(idle) }()
		select {
		case <-idle:
			_ = os.WriteFile(filepath.Join(r.dir, stampFile), []byte(strconv.FormatInt(began.UnixNano(), 10)), 0o600)
		case <-ctx.Done():
			r.Log.Warn("stopped before every step log was shipped; the next start on this log directory ships the rest", zap.String("dir", r.dir))
		}
		_ = r.lock.Close()
	})
}

// key is the object of one attempt; the zero-padded time keeps a step's attempts in order.
func (r *Remote) key(executionID, stepPath string, opened int64) string {
	return fmt.Sprintf("%s/%s/%020d-%s.log", safe(executionID), safe(stepPath), opened, r.id)
}

func readRange(file string, start, end int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, end-start)
	_, err = f.ReadAt(b, start)
	return b, err
}

// piece is one shipped attempt of a step: an object of its own or an entry of a bundle.
type piece struct {
	opened string // zero-padded nanoseconds: sorts in time order
	owner  string // the log directory id that shipped it
	body   []byte // bundle entries carry their bytes
	key    string // objects of their own are read when copied
	size   int64
}

// pieces lists a step's shipped attempts in order. bundles caches an execution's bundle
// entries across calls (catch-up asks for many steps of one execution).
func (r *Remote) pieces(ctx context.Context, executionID, stepPath string, bundles map[string][]bundleEntry) ([]piece, error) {
	exec, step := safe(executionID), safe(stepPath)
	objs, err := r.Bucket.List(ctx, exec+"/"+step+"/")
	if err != nil {
		return nil, err
	}
	var out []piece
	for _, o := range objs {
		name := strings.TrimSuffix(path.Base(o.Key), ".log")
		opened, owner, _ := strings.Cut(name, "-")
		out = append(out, piece{opened: opened, owner: owner, key: o.Key, size: o.Size})
	}
	entries, ok := bundles[exec]
	if !ok {
		if entries, err = r.bundleEntries(ctx, exec); err != nil {
			return nil, err
		}
		if bundles != nil {
			bundles[exec] = entries
		}
	}
	for _, e := range entries {
		if e.step == step {
			out = append(out, piece{opened: e.opened, owner: e.owner, body: e.body, size: int64(len(e.body))})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].opened != out[j].opened {
			return out[i].opened < out[j].opened
		}
		return out[i].owner < out[j].owner
	})
	return out, nil
}

type bundleEntry struct {
	step, opened, owner string
	body                []byte
}

// bundleEntries reads every bundle of an execution.
func (r *Remote) bundleEntries(ctx context.Context, exec string) ([]bundleEntry, error) {
	objs, err := r.Bucket.List(ctx, exec+"/"+bundleFolder+"/")
	if err != nil {
		return nil, err
	}
	var out []bundleEntry
	for _, o := range objs {
		_, owner, _ := strings.Cut(strings.TrimSuffix(path.Base(o.Key), ".tar"), "-")
		b, err := r.Bucket.Get(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("log bundle %s: %w", r.Bucket.URL(o.Key), err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("log bundle %s: %w", r.Bucket.URL(o.Key), err)
			}
			out = append(out, bundleEntry{step: path.Dir(h.Name), opened: strings.TrimSuffix(path.Base(h.Name), ".log"), owner: owner, body: body})
		}
	}
	return out, nil
}

// CopyFrom writes a step's shipped log from byte offset from on (attempts wholly before it are
// not read from the bucket); found is false when the bucket has none of it.
func (r *Remote) CopyFrom(ctx context.Context, out io.Writer, executionID, stepPath string, from int64) (found bool, err error) {
	ps, err := r.pieces(ctx, executionID, stepPath, nil)
	if err != nil || len(ps) == 0 {
		return false, err
	}
	var start int64 // offset of p's first byte in the whole log
	for _, p := range ps {
		end := start + p.size
		if end <= from {
			start = end
			continue
		}
		b := p.body
		if p.key != "" {
			if b, err = r.Bucket.Get(ctx, p.key); err != nil {
				return true, err
			}
		}
		if skip := from - start; skip > 0 {
			b = b[min(skip, int64(len(b))):]
		}
		if _, err := out.Write(b); err != nil {
			return true, err
		}
		start = end
	}
	return true, nil
}

// catchUp ships the tail of every log file written since the last clean stop (or in the last
// week) that the bucket does not hold: attempts whose shipping a killed process cut short.
func (r *Remote) catchUp(ctx context.Context) {
	since := time.Now().Add(-7 * 24 * time.Hour)
	if b, err := os.ReadFile(filepath.Join(r.dir, stampFile)); err == nil {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			since = time.Unix(0, ns).Add(-time.Second)
		}
	}
	execs, _ := os.ReadDir(r.dir)
	bundles := map[string][]bundleEntry{}
	for _, e := range execs {
		if !e.IsDir() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(r.dir, e.Name()))
		for _, f := range files {
			info, err := f.Info()
			if err != nil || f.IsDir() || !strings.HasSuffix(f.Name(), ".log") || info.ModTime().Before(since) {
				continue
			}
			step := strings.TrimSuffix(f.Name(), ".log")
			ps, err := r.pieces(ctx, e.Name(), step, bundles)
			if err != nil {
				r.Log.Warn("could not check a step log against the log bucket", zap.String("execution", e.Name()), zap.String("step", step), zap.Error(err))
				return // the bucket is unreachable: the next start tries again
			}
			var shipped int64
			for _, p := range ps {
				if p.owner == r.id {
					shipped += p.size
				}
			}
			if info.Size() > shipped {
				r.ship(segment{file: filepath.Join(r.dir, e.Name(), f.Name()), executionID: e.Name(), stepPath: step,
					start: shipped, end: info.Size(), opened: info.ModTime().UnixNano()})
			}
		}
	}
}
