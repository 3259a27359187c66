package container

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/netns"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	gocni "github.com/containerd/go-cni"
	"github.com/distribution/reference"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Containers run the steps of a build machine's stages that name an image, through
// containerd: each such step is a container of its own, the stage's workspace bind-mounted at
// /harness and gantry-helper (static) at its usual path, so that the step runs exactly as in a
// pod. All the containers of a stage share one network namespace (a pod's, made with CNI), so
// a Background step is reachable from later steps on localhost and by its identifier.
type Containers struct {
	// Address is containerd's socket.
	Address string
	// Helper is a statically linked gantry-helper, bind-mounted into every container.
	Helper string
	// CNIPlugins are the folders searched for the CNI plugins (bridge, host-local, loopback).
	CNIPlugins []string
	// Subnet is the stage networks' address range; a stage takes one address of it.
	Subnet string
	// BuildKitImage is the image BuildAndPush steps run in (privileged); "" is
	// DefaultBuildKitImage.
	BuildKitImage string

	once   sync.Once
	client *client.Client
	cni    gocni.CNI
	err    error
}

// ContainerNamespace is the containerd namespace of the build machines' containers.
const ContainerNamespace = "gantry"

// Labels on a build machine's containers: the workspace (folder name) and the step.
const (
	labelWorkspace = "gantry.workspace"
	labelStep      = "gantry.step"
)

// DefaultCNIPlugins are where Debian (containernetworking-plugins) and upstream put the plugins.
var DefaultCNIPlugins = []string{"/usr/lib/cni", "/opt/cni/bin"}

// DefaultSubnet is the default address range of stage networks.
const DefaultSubnet = "10.213.0.0/16"

// bridgeName is the host bridge the stage networks of a subnet hang off: one per subnet, as
// a bridge keeps the gateway address it was first given.
func bridgeName(subnet string) string {
	h := fnv.New32a()
	h.Write([]byte(subnet))
	return fmt.Sprintf("gantry%08x", h.Sum32())
}

// connect dials containerd and loads the CNI configuration, once; the addresses the stages
// hold are recorded beside the workspace root (root-net).
func (c *Containers) connect(root string) (*client.Client, gocni.CNI, error) {
	c.once.Do(func() {
		cl, err := client.New(c.Address, client.WithDefaultNamespace(ContainerNamespace), client.WithTimeout(10*time.Second))
		if err != nil {
			c.err = fmt.Errorf("connect to containerd at %s: %w", c.Address, err)
			return
		}
		subnet := cmp.Or(c.Subnet, DefaultSubnet)
		conf, _ := json.Marshal(map[string]any{
			"cniVersion": "1.0.0", "name": "gantry-build",
			"plugins": []any{map[string]any{
				"type": "bridge", "bridge": bridgeName(subnet), "isGateway": true, "ipMasq": true,
				"ipam": map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": subnet}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}}, "dataDir": root + "-net"},
			}},
		})
		cni, err := gocni.New(gocni.WithPluginDir(cmpSlice(c.CNIPlugins, DefaultCNIPlugins)), gocni.WithMinNetworkCount(2),
			gocni.WithLoNetwork, gocni.WithConfListBytes(conf))
		if err != nil {
			cl.Close()
			c.err = fmt.Errorf("load the stage network's CNI configuration: %w", err)
			return
		}
		c.client, c.cni = cl, cni
	})
	return c.client, c.cni, c.err
}

// Close closes the connection to containerd.
func (c *Containers) Close() {
	if c.client != nil {
		c.client.Close()
	}
}

func cmpSlice(s, def []string) []string {
	if len(s) == 0 {
		return def
	}
	return s
}

// imageSpec is what a build machine reads of a step's container: its image and how it runs
// (projected from the type's ContainerSettings by its kind; imageOf).
type imageSpec struct {
	Image           string
	ConnectorRef    string
	ImagePullPolicy string
	Privileged      text
	RunAsUser       text
	// PortBindings (Background) are host ports relayed to the container's (portProxy).
	PortBindings map[string]text
}

// stepID is the step's own identifier, the last of its path.
func stepID(in contract.StepInput) string {
	return in.StepPath[strings.LastIndexByte(in.StepPath, '.')+1:]
}

// stageNet is a stage's network namespace and the hosts file its containers share.
type stageNet struct {
	path  string // the namespace's mount
	hosts string // /etc/hosts of its containers
	ip    string // its address on the machine's bridge
	names []string
}

// containerStep runs a step that names an image in a container of its own.
func (m *Machine) containerStep(ctx, runCtx context.Context, kd kind, in contract.StepInput, spec stepSpec, img imageSpec, top, work string, log *logs.Writer, mask *secrets.Masker) (contract.StepResult, error) {
	where := "build machine " + m.Name
	if m.Containers == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown,
			"step %s runs in a container, and build machine %s runs none: start it with --containerd SOCKET (env GANTRY_CONTAINERD)", in.StepPath, m.Name)
	}
	cl, cni, err := m.Containers.connect(m.Root)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: %v", where, err)
	}
	ctx = namespaces.WithNamespace(ctx, ContainerNamespace)
	runCtx = namespaces.WithNamespace(runCtx, ContainerNamespace)
	image, err := m.pull(runCtx, cl, in, img, log)
	if err != nil {
		return contract.StepResult{}, err
	}
	net, err := m.stageNetwork(ctx, cni, in.Pod.Pod.Name, top)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: the stage's network: %v", where, err)
	}
	var req wire.Request
	var pushed built
	if kd.builds() {
		// BuildKit in its image, as in a pod: gantry-helper build runs buildkitd and buildctl.
		req, pushed, err = buildRequest(ctx, m.Secrets, withWorkspace(in, wire.Workspace), mask)
	} else {
		req, err = m.workspaceRequest(ctx, in, spec, wire.Workspace, mask)
	}
	if err != nil {
		return contract.StepResult{}, err
	}
	if req.Command == "" && len(req.Entrypoint) == 0 {
		// A Background step without a command runs its image's own program.
		cfg, err := image.Spec(ctx)
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: image %s: %v", where, img.Image, err)
		}
		ep := slices.Concat(cfg.Config.Entrypoint, cfg.Config.Cmd)
		if len(spec.Entrypoint) > 0 {
			ep = slices.Concat(spec.Entrypoint, spec.Args)
		}
		if !kd.background || len(ep) == 0 {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s has no command", in.Type, in.StepPath)
		}
		req.Entrypoint = ep
	}
	req.Nonce = nonce()
	id := "gantry-" + req.Nonce
	opts := []oci.SpecOpts{
		oci.WithImageConfig(image),
		oci.WithProcessArgs(wire.Helper, "run"),
		oci.WithProcessCwd(wire.Workspace),
		oci.WithHostname(strings.ToLower(stepID(in))),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: net.path}),
		oci.WithMounts(m.containerMounts(work, net, in)),
	}
	if img.Privileged == "true" {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	}
	if u := strings.TrimSpace(string(img.RunAsUser)); u != "" {
		uid, err := strconv.ParseUint(u, 10, 32)
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: step %s: runAsUser %q is not a user ID", where, in.StepPath, u)
		}
		opts = append(opts, oci.WithUserID(uint32(uid)))
	}
	c, err := cl.NewContainer(ctx, id, client.WithImage(image), client.WithNewSnapshot(id, image),
		client.WithContainerLabels(map[string]string{labelWorkspace: in.Pod.Pod.Name, labelStep: in.StepPath}),
		client.WithNewSpec(opts...))
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: create the container of step %s: %v", where, in.StepPath, err)
	}
	line, _ := json.Marshal(req)
	stdin, feed := io.Pipe()
	go func() { _, _ = feed.Write(append(line, '\n')) }()
	if kd.background {
		proxies, err := m.bindPorts(in, img, net, log)
		if err == nil {
			err = m.startBackground(ctx, c, in, net, stdin, feed, top, log)
		} else {
			feed.Close()
			removeContainer(context.WithoutCancel(ctx), c)
		}
		if err != nil {
			for _, p := range proxies {
				p.Close()
			}
			return contract.StepResult{}, err
		}
		m.mu.Lock()
		if ws := m.live[in.Pod.Pod.Name]; ws != nil {
			ws.proxies = append(ws.proxies, proxies...)
		}
		m.mu.Unlock()
		return contract.StepResult{}, nil
	}
	defer m.removeLater(ctx, in.Pod.Pod.Name, c)
	out := &output{nonce: req.Nonce, log: log, mask: mask}
	errOut := &output{log: log, mask: mask}
	task, err := c.NewTask(ctx, cio.NewCreator(cio.WithStreams(stdin, out, errOut)))
	if err != nil {
		feed.Close()
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: start the container of step %s: %v", where, in.StepPath, err)
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		feed.Close()
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: watch the container of step %s: %v", where, in.StepPath, err)
	}
	if err := task.Start(ctx); err != nil {
		feed.Close()
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: start the container of step %s: %v", where, in.StepPath, err)
	}
	select {
	case <-exited:
	case <-runCtx.Done(): // aborted or timed out: the container goes at once
		_ = task.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		<-exited
	}
	feed.Close()
	task.CloseIO(context.WithoutCancel(ctx))
	if streams := task.IO(); streams != nil {
		streams.Wait()
	}
	result, last := out.flush()
	errOut.flush()
	if runCtx.Err() != nil {
		return contract.StepResult{}, runCtx.Err()
	}
	if result == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: the container of step %s ended without a result%s", where, in.StepPath, lastLine(last))
	}
	tests := machineReports(work, spec, log)
	if err := commandFailure(where+", container "+id, *result, last, tests, mask); err != nil {
		return contract.StepResult{}, err
	}
	if kd.builds() {
		return contract.StepResult{Outputs: publishedImages(pushed, result.Outputs["digest"])}, nil
	}
	return contract.StepResult{Outputs: outputVariables(spec, *result, mask), Tests: tests}, nil
}

// startBackground starts a Background step's container and leaves it running until the stage
// ends; its output goes to a file of the workspace, and its identifier names it in the
// stage's hosts file.
func (m *Machine) startBackground(ctx context.Context, c client.Container, in contract.StepInput, net *stageNet, stdin io.Reader, feed io.Closer, top string, log *logs.Writer) error {
	where := "build machine " + m.Name
	logFile := filepath.Join(top, "gantry", "logs", stepID(in)+"-"+c.ID()+".log")
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		removeContainer(ctx, c)
		return contract.Fail(contract.Unknown, "%s: %v", where, err)
	}
	task, err := c.NewTask(ctx, cio.NewCreator(cio.WithStreams(stdin, f, f)))
	if err == nil {
		err = task.Start(ctx)
	}
	if err != nil {
		f.Close()
		feed.Close()
		removeContainer(context.WithoutCancel(ctx), c)
		return contract.Fail(contract.Unknown, "%s: start the container of step %s: %v", where, in.StepPath, err)
	}
	m.mu.Lock()
	if ws := m.live[in.Pod.Pod.Name]; ws != nil {
		ws.background = append(ws.background, backgroundContainer{feed: feed, out: f})
	}
	m.mu.Unlock()
	if err := net.addHost(stepID(in)); err != nil {
		log.Line(fmt.Sprintf("# gantry: could not name %s in the stage's hosts file: %v", stepID(in), err))
	}
	log.Line(fmt.Sprintf("# gantry: started container %s (pid %d); it runs until the stage ends, reachable as %s and localhost; its output in %s", c.ID(), task.Pid(), stepID(in), logFile))
	return nil
}

// bindPorts relays a Background step's portBindings, host port on loopback to the
// container's port: a host port already taken fails the step before its container starts.
func (m *Machine) bindPorts(in contract.StepInput, img imageSpec, net *stageNet, log *logs.Writer) ([]*portProxy, error) {
	bindings, err := parsePortBindings(img.PortBindings)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "step %s: %v", in.StepPath, err)
	}
	var proxies []*portProxy
	for _, b := range bindings {
		p, err := listenPort(b.host, net.ip+":"+strconv.Itoa(b.container))
		if err != nil {
			for _, p := range proxies {
				p.Close()
			}
			return nil, contract.Fail(contract.Unknown, "build machine %s: step %s binds host port %d (portBindings): %v; pick a free port, or let later steps in containers reach the service as %s:%d",
				m.Name, in.StepPath, b.host, err, stepID(in), b.container)
		}
		proxies = append(proxies, p)
		log.Line(fmt.Sprintf("# gantry: localhost:%d on the build machine reaches port %d of the service", b.host, b.container))
	}
	return proxies, nil
}

// backgroundContainer is a running Background step's container: the ends of its streams this
// process holds (removeContainers ends the container itself).
type backgroundContainer struct {
	feed io.Closer
	out  *os.File
}

// containerMounts are a step container's mounts: the workspace, the helper, the stage's
// hosts file, the host's resolver and the stage's shared paths.
func (m *Machine) containerMounts(work string, net *stageNet, in contract.StepInput) []specs.Mount {
	bind := func(src, dst string, ro bool) specs.Mount {
		opts := []string{"rbind", "rprivate"}
		if ro {
			opts = append(opts, "ro")
		}
		return specs.Mount{Type: "bind", Source: src, Destination: dst, Options: opts}
	}
	out := []specs.Mount{
		bind(work, wire.Workspace, false),
		bind(m.Containers.Helper, wire.Helper, true),
		bind(net.hosts, "/etc/hosts", true),
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		out = append(out, bind("/etc/resolv.conf", "/etc/resolv.conf", true))
	}
	shared := filepath.Join(filepath.Dir(work), "gantry", "shared")
	for _, p := range sharedPaths(in.Pod.Pod.Pod.SharedPaths) {
		dir := filepath.Join(shared, strings.ReplaceAll(strings.Trim(filepath.Clean(p), "/"), "/", "_"))
		if err := os.MkdirAll(dir, 0o777); err == nil {
			out = append(out, bind(dir, p, false))
		}
	}
	return out
}

// sharedPaths are the absolute paths of a rendered sharedPaths list.
func sharedPaths(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok && filepath.IsAbs(s) && s != wire.Workspace && !strings.HasPrefix(s, wire.Workspace+"/") {
			out = append(out, s)
		}
	}
	return out
}

// pull makes the step's image present as its pull policy says, with the credentials of the
// step's connector for the connector's registry.
func (m *Machine) pull(ctx context.Context, cl *client.Client, in contract.StepInput, img imageSpec, log *logs.Writer) (client.Image, error) {
	named, err := reference.ParseDockerRef(img.Image)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "step %s: image %q: %v", in.StepPath, img.Image, err)
	}
	ref := named.String()
	if img.ImagePullPolicy != "Always" {
		if image, err := cl.GetImage(ctx, ref); err == nil {
			return image, nil
		} else if img.ImagePullPolicy == "Never" {
			return nil, contract.Fail(contract.Unknown, "step %s: image %s is not on build machine %s, and its imagePullPolicy is Never", in.StepPath, ref, m.Name)
		}
	}
	var creds func(host string) (string, string, error)
	if img.ConnectorRef != "" {
		rc, ok := in.Pod.Pod.Pod.Registries[img.ConnectorRef]
		if !ok {
			return nil, contract.Fail(contract.Unknown, "step %s: connector %q was not resolved before the run", in.StepPath, img.ConnectorRef)
		}
		if rc.PasswordRef != "" {
			user, pw, err := secrets.Login(ctx, m.Secrets, rc.ID, rc.Username, rc.UsernameRef, rc.PasswordRef)
			if err != nil {
				return nil, err
			}
			hosts := registryHosts(rc)
			creds = func(host string) (string, string, error) {
				if slices.Contains(hosts, host) {
					return user, pw, nil
				}
				return "", "", nil
			}
		}
	}
	authOpts := []docker.AuthorizerOpt{}
	if creds != nil {
		authOpts = append(authOpts, docker.WithAuthCreds(creds))
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(
		docker.WithPlainHTTP(docker.MatchLocalhost), docker.WithAuthorizer(docker.NewDockerAuthorizer(authOpts...)))})
	log.Line(fmt.Sprintf("# gantry: pulling %s", ref))
	image, err := cl.Pull(ctx, ref, client.WithPullUnpack, client.WithResolver(resolver))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		cat := contract.Unknown
		msg := err.Error()
		switch {
		case strings.Contains(msg, "401 Unauthorized") || strings.Contains(msg, "403 Forbidden"):
			cat = contract.Authentication
		case errdefs.IsNotFound(err):
			cat = contract.Verification
		}
		return nil, contract.Fail(cat, "step %s: pull image %s on build machine %s: %v", in.StepPath, ref, m.Name, err)
	}
	return image, nil
}

// registryHosts are the hosts a registry connector's credentials are for.
func registryHosts(rc plan.RegistryConnector) []string {
	switch h := registryHost(rc); h {
	case "https://index.docker.io/v1/", "index.docker.io":
		return []string{"registry-1.docker.io", "docker.io"}
	default:
		return []string{h}
	}
}

// stageNetwork is the stage's network namespace, made with its first container.
func (m *Machine) stageNetwork(ctx context.Context, cni gocni.CNI, name, top string) (*stageNet, error) {
	m.mu.Lock()
	ws := m.live[name]
	m.mu.Unlock()
	if ws == nil {
		return nil, errors.New("the stage's workspace is not this worker's")
	}
	ws.netMu.Lock()
	defer ws.netMu.Unlock()
	if ws.net != nil {
		return ws.net, nil
	}
	ns, err := netns.NewNetNS(filepath.Join(top, "gantry", "netns"))
	if err != nil {
		return nil, fmt.Errorf("make a network namespace: %w", err)
	}
	res, err := cni.Setup(ctx, name, ns.GetPath())
	if err != nil {
		_ = ns.Remove()
		return nil, fmt.Errorf("set the network up with CNI (plugins in %s): %w", strings.Join(cmpSlice(m.Containers.CNIPlugins, DefaultCNIPlugins), ", "), err)
	}
	net := &stageNet{path: ns.GetPath(), hosts: filepath.Join(top, "gantry", "hosts")}
	for _, cfg := range res.Interfaces {
		for _, ip := range cfg.IPConfigs {
			if ip.IP.To4() != nil && !ip.IP.IsLoopback() {
				net.ip = ip.IP.String()
			}
		}
	}
	if err := net.addHost(); err != nil {
		return nil, err
	}
	ws.net = net
	return net, nil
}

// addHost names more of the stage's services at the loopback address; the file is rewritten
// in place, so that the running containers see it.
func (n *stageNet) addHost(names ...string) error {
	n.names = append(n.names, names...)
	content := "127.0.0.1\tlocalhost " + strings.Join(n.names, " ") + "\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	f, err := os.OpenFile(n.hosts, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeLater removes a step's container once the step has reported: the removal (a tenth of
// a second) overlaps the next step's start. The stage's end waits for it.
func (m *Machine) removeLater(ctx context.Context, name string, c client.Container) {
	m.mu.Lock()
	ws := m.live[name]
	if ws != nil {
		ws.removals.Add(1)
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	if ws == nil {
		removeContainer(ctx, c)
		cancel()
		return
	}
	go func() {
		defer ws.removals.Done()
		defer cancel()
		removeContainer(ctx, c)
	}()
}

// removeContainer kills a container's task and removes it with its snapshot.
func removeContainer(ctx context.Context, c client.Container) {
	if task, err := c.Task(ctx, nil); err == nil {
		_, _ = task.Delete(ctx, client.WithProcessKill)
	}
	_ = c.Delete(ctx, client.WithSnapshotCleanup)
}

// removeContainers removes the containers of a workspace, and its network. It is how a stage's
// containers end, whichever worker made them.
func (m *Machine) removeContainers(top string) {
	name := filepath.Base(top)
	if m.Containers == nil {
		return
	}
	cl, cni, err := m.Containers.connect(m.Root)
	if err != nil {
		m.log().Warn("remove a stage's containers", zap.String("workspace", top), zap.Error(err))
		return
	}
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), ContainerNamespace), time.Minute)
	defer cancel()
	list, err := cl.Containers(ctx, fmt.Sprintf("labels.%q==%s", labelWorkspace, name))
	if err != nil {
		m.log().Warn("list a stage's containers", zap.String("workspace", top), zap.Error(err))
	}
	for _, c := range list {
		removeContainer(ctx, c)
		m.log().Info("removed a stage's container", zap.String("container", c.ID()), zap.String("workspace", top))
	}
	paths, _ := filepath.Glob(filepath.Join(top, "gantry", "netns", "*"))
	for _, p := range paths {
		if err := cni.Remove(ctx, name, p); err != nil {
			m.log().Warn("tear a stage's network down", zap.String("netns", p), zap.Error(err))
		}
		if err := netns.LoadNetNS(p).Remove(); err != nil {
			m.log().Warn("remove a stage's network namespace", zap.String("netns", p), zap.Error(err))
		}
	}
}
