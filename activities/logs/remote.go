package logs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// Remote ships step logs to a bucket and reads them back. Each attempt of a step becomes one
// object, <execution>/<step path>/<opened, ns>-<log directory id>.log, written when the attempt
// ends, in the background: a step never waits for the bucket. Reading a step's log lists its
// objects and joins them in order, so retries run by different workers read as one log.
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

func (r *Remote) run() {
	for s := range r.queue {
		r.put(s)
		r.pending.Done()
	}
	close(r.done)
}

func (r *Remote) put(s segment) {
	key := r.key(s.executionID, s.stepPath, s.opened)
	var err error
	for try := 0; try < shipAttempts; try++ {
		if try > 0 {
			time.Sleep(time.Duration(1<<min(try, 6)) * 100 * time.Millisecond)
		}
		var body []byte
		if body, err = readRange(s.file, s.start, s.end); err != nil {
			break // the file is gone: nothing to retry
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = r.Bucket.Put(ctx, key, body)
		cancel()
		if err == nil {
			return
		}
	}
	r.Log.Error("a step log was not shipped to the log bucket; it stays on this worker",
		zap.String("execution", s.executionID), zap.String("step", s.stepPath), zap.String("file", s.file),
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

// segments lists a step's objects in order.
func (r *Remote) segments(ctx context.Context, executionID, stepPath string) ([]objstore.Object, error) {
	objs, err := r.Bucket.List(ctx, safe(executionID)+"/"+safe(stepPath)+"/")
	if err != nil {
		return nil, err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, nil
}

// Copy writes a step's shipped log to out; found is false when the bucket has none of it.
func (r *Remote) Copy(ctx context.Context, out io.Writer, executionID, stepPath string) (found bool, err error) {
	segs, err := r.segments(ctx, executionID, stepPath)
	if err != nil || len(segs) == 0 {
		return false, err
	}
	for _, o := range segs {
		b, err := r.Bucket.Get(ctx, o.Key)
		if err != nil {
			return true, err
		}
		if _, err := out.Write(b); err != nil {
			return true, err
		}
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
			segs, err := r.segments(ctx, e.Name(), step)
			if err != nil {
				r.Log.Warn("could not check a step log against the log bucket", zap.String("execution", e.Name()), zap.String("step", step), zap.Error(err))
				return // the bucket is unreachable: the next start tries again
			}
			var shipped int64
			for _, o := range segs {
				if strings.HasSuffix(o.Key, "-"+r.id+".log") {
					shipped += o.Size
				}
			}
			if info.Size() > shipped {
				r.ship(segment{file: filepath.Join(r.dir, e.Name(), f.Name()), executionID: e.Name(), stepPath: step,
					start: shipped, end: info.Size(), opened: info.ModTime().UnixNano()})
			}
		}
	}
}
