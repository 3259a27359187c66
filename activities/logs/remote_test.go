package logs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/internal/s3test"
)

func startS3(t *testing.T) *objstore.Bucket {
	t.Helper()
	srv, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	if err := srv.Bucket(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	b, err := objstore.Open(ctx, objstore.Config{Location: "logs/gantry", Endpoint: srv.Endpoint, Region: s3test.Region,
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func worker(t *testing.T, b *objstore.Bucket, dir string) logs.Store {
	t.Helper()
	st := logs.Store{Dir: dir, Remote: &logs.Remote{Bucket: b}}
	if err := st.Remote.Start(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return st
}

func attempt(t *testing.T, st logs.Store, header string, lines ...string) {
	t.Helper()
	w, err := st.OpenLazy("exec-1", "s.build", header)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		w.Line(l)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, st logs.Store) string {
	t.Helper()
	var b strings.Builder
	if err := st.Copy(context.Background(), &b, "exec-1", "s.build"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkOffsets reads the log from every offset and wants the rest of want: what a page that
// follows the step asks for (nothing past the end).
func checkOffsets(t *testing.T, st logs.Store, exec, step, want string) {
	t.Helper()
	for from := 0; from <= len(want)+2; from++ {
		var b strings.Builder
		if err := st.CopyFrom(context.Background(), &b, exec, step, int64(from)); err != nil {
			t.Fatal(err)
		}
		if rest := want[min(from, len(want)):]; b.String() != rest {
			t.Fatalf("log from byte %d: %q, want %q", from, b.String(), rest)
		}
	}
}

// Attempts of one step run by two workers read as one log, in order, from a third process
// that ran neither; a step that printed nothing ships nothing.
func TestRemoteJoinsAttemptsOfWorkers(t *testing.T) {
	b := startS3(t)
	ctx := context.Background()
	a, c := worker(t, b, t.TempDir()), worker(t, b, t.TempDir())
	attempt(t, a, "# attempt 1 on a", "one", "two")
	attempt(t, c, "# attempt 2 on c", "three")
	attempt(t, a, "# attempt 3 on a", "four")
	w, _ := a.OpenLazy("exec-1", "s.quiet", "# nothing")
	_ = w.Close()
	a.Remote.Stop(ctx)
	c.Remote.Stop(ctx)

	reader := logs.Store{Dir: t.TempDir(), Remote: &logs.Remote{Bucket: b}}
	want := "# attempt 1 on a\none\ntwo\n# attempt 2 on c\nthree\n# attempt 3 on a\nfour\n"
	if got := read(t, reader); got != want {
		t.Fatalf("log read from the bucket:\n%q\nwant\n%q", got, want)
	}
	checkOffsets(t, reader, "exec-1", "s.build", want)
	if ok, err := reader.Exists(ctx, "exec-1", "s.quiet"); ok || err != nil {
		t.Fatalf("a step that printed nothing has a log in the bucket: %v %v", ok, err)
	}
	objs, err := b.List(ctx, "")
	if err != nil || len(objs) == 0 {
		t.Fatalf("objects: %v %v", objs, err)
	}
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, "exec-1/s.build/") && !strings.HasPrefix(o.Key, "exec-1/~bundles/") {
			t.Fatalf("object %s is neither below the step's path nor a bundle of its execution", o.Key)
		}
	}
}

// Many short steps ending together are shipped as a few bundles, not an object each; a large
// attempt is an object of its own; every step reads back whole.
func TestRemoteBundlesShortSteps(t *testing.T) {
	b := startS3(t)
	ctx := context.Background()
	st := worker(t, b, t.TempDir())
	for i := 0; i < 50; i++ {
		w, _ := st.OpenLazy("exec-2", fmt.Sprintf("s.step%d", i), "")
		w.Line(fmt.Sprintf("output of step %d", i))
		_ = w.Close()
	}
	big := strings.Repeat("x", 100<<10)
	w, _ := st.OpenLazy("exec-2", "s.big", "")
	w.Line(big)
	_ = w.Close()
	st.Remote.Stop(ctx)
	objs, err := b.List(ctx, "exec-2/")
	if err != nil || len(objs) > 10 {
		t.Fatalf("%d objects for 51 attempts (%v): short ones should be bundled", len(objs), err)
	}
	if objs, _ := b.List(ctx, "exec-2/s.big/"); len(objs) != 1 {
		t.Fatalf("the large attempt is not an object of its own: %v", objs)
	}
	reader := logs.Store{Dir: t.TempDir(), Remote: &logs.Remote{Bucket: b}}
	for i := 0; i < 50; i += 7 {
		var out strings.Builder
		if err := reader.Copy(ctx, &out, "exec-2", fmt.Sprintf("s.step%d", i)); err != nil || out.String() != fmt.Sprintf("output of step %d\n", i) {
			t.Fatalf("step %d read back %q %v", i, out.String(), err)
		}
	}
	var out strings.Builder
	if err := reader.Copy(ctx, &out, "exec-2", "s.big"); err != nil || out.String() != big+"\n" {
		t.Fatalf("the large step read back %d bytes, %v", out.Len(), err)
	}
	whole := big + "\n"
	for _, from := range []int{1, 4096, len(whole) - 1, len(whole), len(whole) + 1} {
		out.Reset()
		if err := reader.CopyFrom(ctx, &out, "exec-2", "s.big", int64(from)); err != nil || out.String() != whole[min(from, len(whole)):] {
			t.Fatalf("the large step from byte %d read back %d bytes, %v", from, out.Len(), err)
		}
	}
}

// A process killed before it shipped an attempt: the next process on the same log directory
// ships the rest, once.
func TestRemoteCatchesUpAfterAKill(t *testing.T) {
	b := startS3(t)
	ctx := context.Background()
	dir := t.TempDir()
	first := worker(t, b, dir)
	attempt(t, first, "# shipped", "line")
	first.Remote.Stop(ctx)
	time.Sleep(10 * time.Millisecond)
	// Written with no shipper, as a killed process leaves it: in the file, not in the bucket.
	killed := logs.Store{Dir: dir}
	attempt(t, killed, "# cut short", "lost line")
	if err := os.Chtimes(filepath.Join(dir, "exec-1", "s.build.log"), time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}

	next := worker(t, b, dir)
	next.Remote.Stop(ctx)
	reader := logs.Store{Dir: t.TempDir(), Remote: &logs.Remote{Bucket: b}}
	want := "# shipped\nline\n# cut short\nlost line\n"
	if got := read(t, reader); got != want {
		t.Fatalf("after the restart the bucket holds\n%q\nwant\n%q", got, want)
	}
	again := worker(t, b, dir)
	again.Remote.Stop(ctx)
	if got := read(t, reader); got != want {
		t.Fatalf("a second restart shipped again:\n%q", got)
	}
}

// Without a bucket, or before the bucket has any of it, a step's log is the local file.
func TestLocalWhileNotShipped(t *testing.T) {
	b := startS3(t)
	dir := t.TempDir()
	st := logs.Store{Dir: dir, Remote: &logs.Remote{Bucket: b}} // reads only: never started
	attempt(t, st, "# running here", "partial")
	if got := read(t, st); got != "# running here\npartial\n" {
		t.Fatalf("local log: %q", got)
	}
	checkOffsets(t, st, "exec-1", "s.build", "# running here\npartial\n")
}
