// Package devserver runs a Temporal server (go.temporal.io/server) inside the gantry process,
// tuned for the latency a CD engine needs: on SQLite for the embedded default, or on PostgreSQL
// for `gantry temporal`, the server process of the scaled-out topology.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/gantry-cd/gantry/internal/freeport"
)

// Options configure the embedded server.
type Options struct {
	// DataDir holds the SQLite databases (temporal.db and visibility.db); "" keeps everything
	// in memory (lost on Stop).
	DataDir   string
	Namespace string
	// Extra are further namespaces to create, without search attributes (Gantry's internal one).
	Extra []string
	// Retention is how long closed executions are kept (default 30 days).
	Retention time.Duration
	// SearchAttributes are registered on start (name → type), so workflows can use them at once.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's own logs; nil discards them.
	Logger log.Logger
	// Postgres, a postgres:// URL, keeps state in that database and visibility in
	// DATABASE_visibility instead of SQLite (DataDir is unused); both are created or upgraded
	// to this build's schema at start.
	Postgres string
	// Listen is the frontend's IP:port; the seven ports after it carry the internal services.
	// "" picks free loopback ports.
	Listen string
	// HistoryShards is fixed when a database is first used (default 1 on SQLite, 4 on PostgreSQL).
	HistoryShards int32
}

// Server is a running embedded Temporal server.
type Server struct {
	srv       temporal.Server
	Address   string // frontend host:port
	Namespace string
}

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

	ip, ports, err := listenPorts(o.Listen)
	if err != nil {
		return nil, err
	}
	stores, sqlCfg, err := dataStores(&o)
	if err != nil {
		return nil, err
	}
	cfg, hosts, frontend := serverConfig(ip, ports, stores, o.HistoryShards)
	if o.Postgres == "" {
		if err := createNamespaces(&sqlCfg, o); err != nil {
			return nil, err
		}
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, o.Logger)
	if err != nil {
		return nil, err
	}
	dc := FastDynamicConfig()
	if o.Postgres != "" {
		// Namespaces are registered through the API after start; see them within a second.
		dc[dynamicconfig.NamespaceCacheRefreshInterval.Key()] = []dynamicconfig.ConstrainedValue{{Value: time.Second}}
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices), // the worker service runs Schedules (cron triggers)
		temporal.WithLogger(o.Logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dc),
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
	if err := s.prepareNamespace(ctx, o); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return s, nil
}

// dataStores returns the server's persistence, setting up PostgreSQL's schemas or SQLite's
// files, and the default number of history shards for it; sqlCfg is SQLite's main store.
func dataStores(o *Options) (stores map[string]config.DataStore, sqlCfg config.SQL, err error) {
	if o.Postgres != "" {
		main, vis, err := postgresStores(o.Postgres)
		if err != nil {
			return nil, sqlCfg, err
		}
		if err := setupPostgres(main, "postgresql/v12/temporal", o.Logger); err != nil {
			return nil, sqlCfg, fmt.Errorf("temporal on postgres: %w", err)
		}
		if err := setupPostgres(vis, "postgresql/v12/visibility", o.Logger); err != nil {
			return nil, sqlCfg, fmt.Errorf("temporal on postgres: %w", err)
		}
		stores = map[string]config.DataStore{"default": {SQL: &main}, "visibility": {SQL: &vis}}
		if o.HistoryShards == 0 {
			o.HistoryShards = 4
		}
	} else {
		var visCfg config.SQL
		if sqlCfg, visCfg, err = sqliteStores(o.DataDir); err != nil {
			return nil, sqlCfg, err
		}
		stores = map[string]config.DataStore{"default": {SQL: &sqlCfg}, "visibility": {SQL: &visCfg}}
		if o.HistoryShards == 0 {
			o.HistoryShards = 1
		}
	}
	return stores, sqlCfg, nil
}

// serverConfig is the static configuration of the four services on their ports, and the
// frontend's address.
func serverConfig(ip string, ports []int, stores map[string]config.DataStore, shards int32) (*config.Config, map[primitives.ServiceName]static.Hosts, string) {
	services := map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for i, name := range []string{"frontend", "history", "matching", "worker"} {
		services[name] = config.Service{RPC: config.RPC{GRPCPort: ports[2*i], MembershipPort: ports[2*i+1], BindOnIP: ip}}
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(fmt.Sprintf("%s:%d", broadcastIP(ip), ports[2*i]))
	}
	frontend := fmt.Sprintf("%s:%d", broadcastIP(ip), ports[0])

	cfg := &config.Config{
		Global: config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: broadcastIP(ip)}},
		Persistence: config.Persistence{
			DefaultStore:     "default",
			VisibilityStore:  "visibility",
			NumHistoryShards: shards,
			DataStores:       stores,
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
	return cfg, hosts, frontend
}

// createNamespaces writes the namespaces into SQLite before start, saving the namespace
// cache's wait.
func createNamespaces(sqlCfg *config.SQL, o Options) error {
	nsCfg, err := sqliteschema.NewNamespaceConfig("active", o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return err
	}
	nsCfg.Detail.Config.Retention = durationpb.New(o.Retention)
	all := []*sqliteschema.NamespaceConfig{nsCfg}
	for _, name := range o.Extra {
		extra, err := sqliteschema.NewNamespaceConfig("active", name, false, nil)
		if err != nil {
			return err
		}
		extra.Detail.Config.Retention = durationpb.New(o.Retention)
		all = append(all, extra)
	}
	if err := sqliteschema.CreateNamespaces(sqlCfg, all...); err != nil {
		return fmt.Errorf("embedded temporal: create namespaces: %w", err)
	}
	return nil
}

// Stop stops the server.
func (s *Server) Stop() error { return s.srv.Stop() }

// prepareNamespace registers the namespace (on PostgreSQL) and the custom search attributes
// that are not registered yet.
func (s *Server) prepareNamespace(ctx context.Context, o Options) error {
	if len(o.SearchAttributes) == 0 && o.Postgres == "" {
		return nil
	}
	c, err := client.Dial(client.Options{HostPort: s.Address, Namespace: s.Namespace, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("temporal: connect to register the namespace: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if o.Postgres != "" {
		for _, name := range append([]string{s.Namespace}, o.Extra...) {
			if err := RegisterNamespace(ctx, c, name, o.Retention); err != nil {
				return err
			}
		}
	}
	// A namespace registered a moment ago, and its search attributes, reach the frontend's cache
	// within its refresh interval: wait until a query that names them all is accepted.
	names := keys(o.SearchAttributes)
	sort.Strings(names)
	query := strings.Join(names, " IS NULL AND ") + " IS NULL"
	for {
		err := RegisterSearchAttributes(ctx, c.OperatorService(), s.Namespace, o.SearchAttributes)
		if err == nil && len(names) > 0 {
			_, err = c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.Namespace, Query: query})
		}
		var notFound *serviceerror.NamespaceNotFound
		var invalid *serviceerror.InvalidArgument
		if err == nil || !(errors.As(err, &notFound) || errors.As(err, &invalid)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %q or its search attributes not ready: %w", s.Namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// listenPorts returns the IP and the eight ports of the four services (gRPC and membership
// each): listen's port and the seven after it, or free loopback ports.
func listenPorts(listen string) (string, []int, error) {
	if listen == "" {
		ports, err := freeport.Ports(8)
		return "127.0.0.1", ports, err
	}
	host, port, err := net.SplitHostPort(listen)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || net.ParseIP(host) == nil || p < 1 || p > 65535-7 {
		return "", nil, fmt.Errorf("--listen %q: want IP:PORT, e.g. 127.0.0.1:7233 (the next seven ports are used too)", listen)
	}
	ports := make([]int, 8)
	for i := range ports {
		ports[i] = p + i
	}
	return host, ports, nil
}

// broadcastIP is the address other services and clients use for ip.
func broadcastIP(ip string) string {
	if net.ParseIP(ip).IsUnspecified() {
		return "127.0.0.1"
	}
	return ip
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
	// A queue keeps each task it loaded, done or not, until its next checkpoint (30 s by
	// default), and every new task notification splits that list: with the rate limits above
	// raised, one profiled burst of 2,000 approvals spent a quarter of the server's CPU there.
	// Checkpoints each second drop the done tasks (and delete them from the database) sooner.
	set(dynamicconfig.TransferProcessorUpdateAckInterval.Key(), time.Second)
	set(dynamicconfig.TimerProcessorUpdateAckInterval.Key(), time.Second)
	set(dynamicconfig.VisibilityProcessorUpdateAckInterval.Key(), time.Second)
	set(dynamicconfig.OutboundProcessorUpdateAckInterval.Key(), time.Second)
	// The timer queue reads 1 s ahead and moves earlier timers behind that mark.
	set(dynamicconfig.TimerProcessorMaxTimeShift.Key(), time.Millisecond)
	set(dynamicconfig.MatchingNumTaskqueueReadPartitions.Key(), 1)
	set(dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(), 1)
	set(dynamicconfig.TaskQueueScannerEnabled.Key(), false)
	set(dynamicconfig.HistoryScannerEnabled.Key(), false)
	set(dynamicconfig.ExecutionsScannerEnabled.Key(), false)
	set(dynamicconfig.BuildIdScavengerEnabled.Key(), false)
	// A client waiting for an execution's result long-polls its history; now and then the
	// close notification is missed and the poll only returns at its expiry (20 s by default),
	// so a finished run looked stuck. Shorter polls bound that; the SDK polls again.
	set(dynamicconfig.HistoryLongPollExpirationInterval.Key(), 2*time.Second)
	// Workflow tasks read the events since the worker last saw the workflow from this cache,
	// else from the database. 512 KiB per shard holds the recent events of a few hundred
	// executions; thousands waiting at once (approvals) read theirs from disk at each task.
	set(dynamicconfig.EventsCacheMaxSizeBytes.Key(), 64<<20)
	return sc
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
