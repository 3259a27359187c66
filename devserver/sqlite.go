package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// The embedded server keeps executions and visibility (the list of executions the UI and the
// API search) in two SQLite files. Temporal's SQLite plugin opens one connection per file and
// every query of a file waits for it; a visibility write updates ~60 indexes (3-5 ms of CPU
// here), so in one file it held up the starts, tasks and timers queued behind it.
const (
	dbFile         = "temporal.db"   // executions, task queues, namespaces
	visibilityFile = "visibility.db" // executions_visibility
)

// sqliteStores are the SQLite configs of the executions and the visibility store in dataDir
// ("" keeps both in memory), with the schemas created on first use and any visibility records
// in temporal.db moved over.
func sqliteStores(dataDir string) (main, vis config.SQL, err error) {
	if dataDir == "" {
		stamp := time.Now().UnixNano()
		return memoryStore(fmt.Sprintf("gantry%d", stamp)), memoryStore(fmt.Sprintf("gantry%d-visibility", stamp)), nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return main, vis, fmt.Errorf("embedded temporal: create data directory: %w", err)
	}
	mainPath, visPath := filepath.Join(dataDir, dbFile), filepath.Join(dataDir, visibilityFile)
	if main, err = fileStore(mainPath); err != nil {
		return main, vis, err
	}
	if vis, err = fileStore(visPath); err != nil {
		return main, vis, err
	}
	if err := moveVisibility(mainPath, visPath); err != nil {
		return main, vis, fmt.Errorf("embedded temporal: move the visibility records of %s to %s: %w (the next start tries again)", mainPath, visPath, err)
	}
	return main, vis, nil
}

// memoryStore is an in-memory database, shared by the server's connections while one is open.
func memoryStore(name string) config.SQL {
	return config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: name,
		ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"}}
}

// fileStore is the config of the database at path, its schema created if the file is new.
func fileStore(path string) (config.SQL, error) {
	cfg := config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: path, ConnectAttributes: map[string]string{
		"mode": "rwc",
		// Keys without "_": the plugin adds the _pragma= prefix itself. WAL halves the cost
		// of every write compared with the default rollback journal.
		"journal_mode": "wal",
		"synchronous":  "normal",
		"busy_timeout": "10000",
	}}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		// The plugin creates Temporal's whole schema in a file; the visibility file keeps the
		// executions tables empty, as temporal.db keeps its visibility table.
		if err := sqliteschema.SetupSchema(&cfg); err != nil {
			return cfg, fmt.Errorf("embedded temporal: create schema in %s: %w", path, err)
		}
	}
	return cfg, nil
}

// moveVisibility moves the visibility records temporal.db holds (a data directory of a release
// that kept one file, or one such release ran on it again) into visibility.db, replacing any
// record of the same run there, and then deletes them from temporal.db. A transaction that
// writes two files is not atomic across them in WAL mode, so copy and delete are two: a crash
// between them leaves the records in both, and the next start moves them again.
func moveVisibility(mainPath, visPath string) error {
	db, err := sql.Open("sqlite", "file:"+mainPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx) // ATTACH holds for one connection only
	if err != nil {
		return err
	}
	defer conn.Close()
	var left int
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM executions_visibility)").Scan(&left); err != nil || left == 0 {
		return err
	}
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS vis", visPath); err != nil {
		return err
	}
	if err := copyVisibility(ctx, conn, "main", "vis"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "DELETE FROM main.executions_visibility")
	return err
}

// copyVisibility copies every record of from's executions_visibility into to's, in one
// transaction that first deletes to's records of the same runs. Deleting and inserting (not
// REPLACE, which skips the delete trigger) keeps to's full-text indexes, maintained by its
// triggers, in step.
func copyVisibility(ctx context.Context, conn *sql.Conn, from, to string) error {
	cols, err := storedColumns(ctx, conn, from)
	if err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range []string{
		fmt.Sprintf("DELETE FROM %s.executions_visibility WHERE (namespace_id, run_id) IN (SELECT namespace_id, run_id FROM %s.executions_visibility)", to, from),
		fmt.Sprintf("INSERT INTO %s.executions_visibility (%s) SELECT %s FROM %s.executions_visibility", to, list, list, from),
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// storedColumns names the columns of schema's executions_visibility that are not generated
// from others (the search attribute columns are derived from the search_attributes JSON).
func storedColumns(ctx context.Context, conn *sql.Conn, schema string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT name, hidden FROM pragma_table_xinfo('executions_visibility', '%s')", schema))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var name string
		var hidden int
		if err := rows.Scan(&name, &hidden); err != nil {
			return nil, err
		}
		if hidden == 0 { // 2 and 3 are generated columns
			cols = append(cols, `"`+name+`"`)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no executions_visibility table in %s", schema)
	}
	return cols, nil
}
