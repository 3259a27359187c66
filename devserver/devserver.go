// Package devserver runs an embedded Temporal server (go.temporal.io/server) on loopback with
// SQLite persistence, tuned for the latency a CD engine needs on one machine.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Options configure the embedded server.
type Options struct {
	// DataDir holds the SQLite database; "" keeps everything in memory (lost on Stop).
	DataDir   string
	Namespace string
	// Retention is how long closed executions are kept (default 30 days).
	Retention time.Duration
	// SearchAttributes are registered on start (name → type), so workflows can use them at once.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's own logs; nil discards them.
	Logger log.Logger
}

// Server is a running embedded Temporal server.
type Server struct {
	srv       temporal.Server
	Address   string // frontend host:port
	Namespace string
}

// dbFile is the SQLite file name inside DataDir.
const dbFile = "temporal.db"

// Start starts the server and returns once its frontend accepts calls and the search attributes
// are registered.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Retention == 0 {
		o.Retention = 30 * 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = log.NewNoopLogger()
	}
	// Hashing the 200 MB executable for the SDK's binary checksum costs ~300 ms per start.
	worker.SetBinaryChecksum("gantry")

	const ip = "127.0.0.1"
	sqlCfg := config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if o.DataDir == "" {
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
		sqlCfg.DatabaseName = fmt.Sprintf("gantry%d", time.Now().UnixNano())
	} else {
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("embedded temporal: create data directory: %w", err)
		}
		path := filepath.Join(o.DataDir, dbFile)
		sqlCfg.DatabaseName = path
		sqlCfg.ConnectAttributes["mode"] = "rwc"
		// Keys without "_": the plugin adds the _pragma= prefix itself. WAL halves the cost
		// of every history write compared with the default rollback journal.
		sqlCfg.ConnectAttributes["journal_mode"] = "wal"
		sqlCfg.ConnectAttributes["synchronous"] = "normal"
		sqlCfg.ConnectAttributes["busy_timeout"] = "10000"
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := sqliteschema.SetupSchema(&sqlCfg); err != nil {
				return nil, fmt.Errorf("embedded temporal: create schema in %s: %w", path, err)
			}
		}
	}

	ports, err := freePorts(8)
	if err != nil {
		return nil, err
	}
	services := map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for i, name := range []string{"frontend", "history", "matching", "worker"} {
		services[name] = config.Service{RPC: config.RPC{GRPCPort: ports[2*i], MembershipPort: ports[2*i+1], BindOnIP: ip}}
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(fmt.Sprintf("%s:%d", ip, ports[2*i]))
	}
	frontend := fmt.Sprintf("%s:%d", ip, ports[0])

	cfg := &config.Config{
		Global: config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: &sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10,
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		PublicClient: config.PublicClient{HostPort: frontend},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
	}

	nsCfg, err := sqliteschema.NewNamespaceConfig("active", o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, err
	}
	nsCfg.Detail.Config.Retention = durationpb.New(o.Retention)
	if err := sqliteschema.CreateNamespaces(&sqlCfg, nsCfg); err != nil {
		return nil, fmt.Errorf("embedded temporal: create namespace %q: %w", o.Namespace, err)
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, o.Logger)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices), // the worker service runs Schedules (cron triggers)
		temporal.WithLogger(o.Logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(FastDynamicConfig()),
		temporal.WithStaticHosts(hosts),
		temporal.WithCustomMetricsHandler(metrics.NoopMetricsHandler),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("embedded temporal: start: %w", err)
	}
	s := &Server{srv: srv, Address: frontend, Namespace: o.Namespace}
	if err := s.registerSearchAttributes(ctx, o.SearchAttributes); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops the server.
func (s *Server) Stop() error { return s.srv.Stop() }

// registerSearchAttributes adds the custom search attributes that are not registered yet.
func (s *Server) registerSearchAttributes(ctx context.Context, attrs map[string]enumspb.IndexedValueType) error {
	if len(attrs) == 0 {
		return nil
	}
	c, err := client.Dial(client.Options{HostPort: s.Address, Namespace: s.Namespace, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("embedded temporal: connect to register search attributes: %w", err)
	}
	defer c.Close()
	return RegisterSearchAttributes(ctx, c.OperatorService(), s.Namespace, attrs)
}

// RegisterSearchAttributes registers attrs on a namespace, skipping the ones that already exist.
func RegisterSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, attrs map[string]enumspb.IndexedValueType) error {
	existing, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, t := range attrs {
		if _, ok := existing.GetCustomAttributes()[name]; !ok {
			missing[name] = t
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register search attributes %s: %w", strings.Join(keys(missing), ", "), err)
	}
	return nil
}

// FastDynamicConfig removes the embedded server's rate limits that dominate per-step latency on
// one shard (see README, "Embedded server tuning").
func FastDynamicConfig() dynamicconfig.StaticClient {
	sc := dynamicconfig.StaticClient{}
	set := func(k dynamicconfig.Key, v any) { sc[k] = []dynamicconfig.ConstrainedValue{{Value: v}} }
	// History queue readers default to 20 loads/s per shard: 50 ms per step on one shard.
	set(dynamicconfig.TransferProcessorMaxPollRPS.Key(), 100000)
	set(dynamicconfig.TimerProcessorMaxPollRPS.Key(), 100000)
	set(dynamicconfig.VisibilityProcessorMaxPollRPS.Key(), 100000)
	set(dynamicconfig.OutboundProcessorMaxPollRPS.Key(), 100000)
	// The timer queue reads 1 s ahead and moves earlier timers behind that mark.
	set(dynamicconfig.TimerProcessorMaxTimeShift.Key(), time.Millisecond)
	set(dynamicconfig.MatchingNumTaskqueueReadPartitions.Key(), 1)
	set(dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(), 1)
	set(dynamicconfig.TaskQueueScannerEnabled.Key(), false)
	set(dynamicconfig.HistoryScannerEnabled.Key(), false)
	set(dynamicconfig.ExecutionsScannerEnabled.Key(), false)
	set(dynamicconfig.BuildIdScavengerEnabled.Key(), false)
	return sc
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded temporal: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

func keys(m map[string]enumspb.IndexedValueType) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
