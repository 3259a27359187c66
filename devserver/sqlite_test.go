package devserver

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

const movedRun = "6f0c2a8e-5b1d-4c3a-9e7f-000000000001"

// TestVisibilityOfEarlierDataDirectoryMoves starts the embedded server on a data directory laid
// out as earlier releases did (visibility records inside temporal.db, no visibility.db) and
// finds an execution recorded there through the API; temporal.db no longer holds the record.
func TestVisibilityOfEarlierDataDirectoryMoves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A server of this release records an execution, which lands in visibility.db only.
	before := t.TempDir()
	srv, c := startIn(ctx, t, before)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "recorded-before", TaskQueue: "nobody-polls"}, "Anything")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "done"); err != nil {
		t.Fatal(err)
	}
	waitListed(ctx, t, c, "RunId = '"+run.GetRunID()+"'")
	c.Close()
	srv.Stop()
	if n := count(t, filepath.Join(before, dbFile)); n != 0 {
		t.Fatalf("temporal.db holds %d visibility records, want 0", n)
	}
	if n := count(t, filepath.Join(before, visibilityFile)); n != 1 {
		t.Fatalf("visibility.db holds %d visibility records, want 1", n)
	}

	// The same state in one file: temporal.db with the record, no visibility.db.
	earlier := t.TempDir()
	db := open(t, filepath.Join(before, dbFile))
	if _, err := db.Exec("VACUUM INTO ?", filepath.Join(earlier, dbFile)); err != nil {
		t.Fatal(err)
	}
	db = open(t, filepath.Join(earlier, dbFile))
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS old", filepath.Join(before, visibilityFile)); err != nil {
		t.Fatal(err)
	}
	if err := copyVisibility(ctx, conn, "old", "main"); err != nil {
		t.Fatal(err)
	}
	// The server of the next start may write the record of "recorded-before" again from its
	// queue of visibility tasks; a record no execution writes again shows the move.
	if _, err := conn.ExecContext(ctx, "UPDATE executions_visibility SET workflow_id = 'only-in-temporal-db', run_id = ?", movedRun); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if n := count(t, filepath.Join(earlier, dbFile)); n != 1 {
		t.Fatalf("the earlier layout's temporal.db holds %d visibility records, want 1", n)
	}

	srv, c = startIn(ctx, t, earlier)
	defer srv.Stop()
	defer c.Close()
	waitListed(ctx, t, c, "WorkflowId = 'only-in-temporal-db' AND RunId = '"+movedRun+"'")
	if n := count(t, filepath.Join(earlier, dbFile)); n != 0 {
		t.Errorf("temporal.db still holds %d visibility records", n)
	}

	// Moving again (a start after a finished move) changes nothing.
	if err := moveVisibility(filepath.Join(earlier, dbFile), filepath.Join(earlier, visibilityFile)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, filepath.Join(earlier, visibilityFile)); n < 1 || n > 2 {
		t.Errorf("visibility.db holds %d records after a second move, want the moved one (and recorded-before's, written again)", n)
	}
}

// TestVisibilityMoveResumes moves records that temporal.db holds alone (no move begun) and
// that both files hold (a move stopped between its copy and its delete, or an earlier release
// run on the directory again), keeping visibility.db's full-text index in step.
func TestVisibilityMoveResumes(t *testing.T) {
	dir := t.TempDir()
	mainPath, visPath := filepath.Join(dir, dbFile), filepath.Join(dir, visibilityFile)
	if _, err := fileStore(mainPath); err != nil {
		t.Fatal(err)
	}
	if _, err := fileStore(visPath); err != nil {
		t.Fatal(err)
	}
	db := open(t, mainPath)
	insert := `INSERT INTO executions_visibility (namespace_id, run_id, start_time, execution_time, workflow_id,
		workflow_type_name, status, history_length, history_size_bytes, state_transition_count, memo, encoding, task_queue, search_attributes)
		VALUES ('ns', ?, '2026-11-26 01:00:00+00:00', '2026-11-26 01:00:00+00:00', ?, 'T', ?, 1, 1, 1, x'', 'Proto3', 'q', json_object('Text01', ?))`
	add := func(run, text string, status int) {
		t.Helper()
		if _, err := db.Exec(insert, run, "wf-"+run, status, text); err != nil {
			t.Fatal(err)
		}
	}
	matches := func(word string) int {
		t.Helper()
		var n int
		if err := open(t, visPath).QueryRow("SELECT count(*) FROM executions_visibility_fts_text WHERE executions_visibility_fts_text MATCH ?", word).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	add("r1", "deploy to prod", 1)
	add("r2", "deploy to prod", 1)
	if err := moveVisibility(mainPath, visPath); err != nil {
		t.Fatal(err)
	}
	if n, m := count(t, visPath), count(t, mainPath); n != 2 || m != 0 {
		t.Fatalf("after the move visibility.db holds %d, temporal.db %d; want 2 and 0", n, m)
	}
	if n := matches("prod"); n != 2 {
		t.Errorf("full-text matches for prod: %d, want 2", n)
	}
	// r1 again in temporal.db, changed: it replaces visibility.db's r1, text index included.
	add("r1", "deploy to staging", 2)
	if err := moveVisibility(mainPath, visPath); err != nil {
		t.Fatal(err)
	}
	if n, m := count(t, visPath), count(t, mainPath); n != 2 || m != 0 {
		t.Fatalf("after moving again visibility.db holds %d, temporal.db %d; want 2 and 0", n, m)
	}
	var status int
	if err := open(t, visPath).QueryRow("SELECT status FROM executions_visibility WHERE run_id = 'r1'").Scan(&status); err != nil || status != 2 {
		t.Errorf("r1's status %d %v, want 2 (the record moved last)", status, err)
	}
	if p, s := matches("prod"), matches("staging"); p != 1 || s != 1 {
		t.Errorf("full-text matches: prod %d, staging %d; want 1 and 1", p, s)
	}
}

func startIn(ctx context.Context, t *testing.T, dir string) (*Server, client.Client) {
	t.Helper()
	srv, err := Start(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: srv.Address, Namespace: srv.Namespace, Logger: quietLogger{}})
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	return srv, c
}

// waitListed waits until the visibility store lists one terminated execution for query
// (records are written by a queue, after the call that changed the execution returned).
func waitListed(ctx context.Context, t *testing.T, c client.Client, query string) {
	t.Helper()
	for {
		resp, err := c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: query})
		if err == nil && len(resp.Executions) == 1 && resp.Executions[0].Status == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not listed as one terminated execution: %v %v", query, resp, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, path string) int {
	t.Helper()
	var n int
	if err := open(t, path).QueryRow("SELECT count(*) FROM executions_visibility").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
