package devserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"
)

// postgresStores parses a postgres:// URL into the SQL configs of the default store (the URL's
// database) and the visibility store (that name plus "_visibility").
func postgresStores(raw string) (main, visibility config.SQL, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return main, visibility, fmt.Errorf("--postgres %q: want postgres://USER[:PASSWORD]@HOST:PORT/DATABASE[?sslmode=disable]", redact(raw))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		db = "temporal"
	}
	host := u.Host
	if u.Port() == "" {
		host += ":5432"
	}
	main = config.SQL{
		PluginName:        postgresplugin.PluginName,
		ConnectAddr:       host,
		ConnectProtocol:   "tcp",
		User:              u.User.Username(),
		DatabaseName:      db,
		ConnectAttributes: map[string]string{},
		MaxConns:          20,
		MaxIdleConns:      20,
	}
	main.Password, _ = u.User.Password()
	for k, v := range u.Query() {
		main.ConnectAttributes[k] = v[0]
	}
	visibility = main
	visibility.DatabaseName = db + "_visibility"
	visibility.ConnectAttributes = main.ConnectAttributes
	return main, visibility, nil
}

// redact hides a URL's password for error messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return raw
}

// setupPostgres creates the database if it is missing and brings its schema to the version this
// server build expects: the same steps as temporal-sql-tool create-database, setup-schema -v 0.0
// and update-schema, from the schema files embedded in go.temporal.io/server.
func setupPostgres(cfg config.SQL, schemaName string, logger log.Logger) error {
	create := cfg
	if err := sqltool.DoCreateDatabase(&create, "postgres", logger); err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("create database %s on %s: %w (is PostgreSQL running, and may user %q create databases?)", cfg.DatabaseName, cfg.ConnectAddr, err, cfg.User)
	}
	conn, err := sqltool.NewConnection(&cfg, logger)
	if err != nil {
		return fmt.Errorf("connect to database %s on %s: %w", cfg.DatabaseName, cfg.ConnectAddr, err)
	}
	defer conn.Close()
	if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return fmt.Errorf("set up schema versioning in %s: %w", cfg.DatabaseName, err)
	}
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: schemaName}, logger).Run(); err != nil {
		return fmt.Errorf("update schema of %s: %w", cfg.DatabaseName, err)
	}
	return nil
}

// RegisterNamespace creates the namespace through the frontend unless it exists, then waits
// until the frontend's namespace cache knows it (search attributes need that).
func RegisterNamespace(ctx context.Context, c client.Client, name string, retention time.Duration) error {
	_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        name,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %q: %w", name, err)
	}
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: name})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %q not visible after registration: %w", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
