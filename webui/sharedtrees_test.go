package webui

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/workflows"
)

// Twenty pages polling one execution at once cause one read of its tree; a read older than
// fresh, or one that failed, is not used again; a page that goes away does not fail the others.
func TestLogPagesShareTreeReads(t *testing.T) {
	var reads atomic.Int32
	fail := atomic.Bool{}
	release := make(chan struct{})
	s := &sharedTrees{fresh: time.Hour, read: func(ctx context.Context, id string) (*workflows.Node, error) {
		n := reads.Add(1)
		<-release
		if err := ctx.Err(); err != nil {
			return nil, err // the starter's context ending must not end a shared read
		}
		if fail.Load() {
			return nil, errors.New("unavailable")
		}
		return &workflows.Node{ID: id, Name: string(rune('0' + n))}, nil
	}}

	gone, leave := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	trees := make([]*workflows.Node, 20)
	errs := make([]error, 20)
	page := func(i int, ctx context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			trees[i], errs[i] = s.get(ctx, "e1")
		}()
	}
	page(0, gone) // the page whose read the others share goes away before it finishes
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < len(trees); i++ {
		page(i, context.Background())
	}
	time.Sleep(50 * time.Millisecond) // the other nineteen wait for the first read (or come after it: either way they share it)
	leave()
	close(release)
	wg.Wait()
	if got := reads.Load(); got != 1 {
		t.Fatalf("20 concurrent pages made %d reads, want 1", got)
	}
	for i, tr := range trees {
		if i == 0 && errs[i] != nil {
			continue // this page went away; it may or may not have seen the answer
		}
		if errs[i] != nil || tr == nil || tr.Name != "1" {
			t.Fatalf("page %d: %v %v, want the first read's tree", i, tr, errs[i])
		}
	}

	if tr, _ := s.get(context.Background(), "e1"); tr.Name != "1" || reads.Load() != 1 {
		t.Fatalf("a read within fresh was not reused: %v, %d reads", tr, reads.Load())
	}
	if tr, _ := s.get(context.Background(), "e2"); tr.ID != "e2" || reads.Load() != 2 {
		t.Fatalf("another execution shared e1's read: %v", tr)
	}
	s.fresh = 0 // every finished read is now older than fresh
	if tr, _ := s.get(context.Background(), "e1"); tr.Name != "3" {
		t.Fatalf("a read older than fresh was reused: %v", tr)
	}
	if len(s.reads) != 1 {
		t.Fatalf("%d reads kept, want only e1's: e2's went stale", len(s.reads))
	}

	fail.Store(true)
	if _, err := s.get(context.Background(), "e3"); err == nil {
		t.Fatal("the failed read answered no error")
	}
	fail.Store(false)
	if tr, err := s.get(context.Background(), "e3"); err != nil || tr.ID != "e3" {
		t.Fatalf("a failed read was reused: %v %v", tr, err)
	}
}
