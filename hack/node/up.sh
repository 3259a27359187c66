#!/usr/bin/env bash
# Starts a single-node Kubernetes whose node really runs containers, on loopback: a registry
# (crane), containerd with Debian's runc, the control plane (hack/k8s/up.sh without kwok) and
# a kubelet. One node per machine: the kubelet's ports (10250, 10248) and host paths
# (/run/containerd, /var/lib/kubelet, /var/lib/cni, the k8snode0 bridge) are fixed.
# Usage: up.sh <k8s-bindir> <node-dir> <statedir>   (from hack/k8s/build.sh and build.sh)
# Ports: REGISTRY_PORT (5001) and hack/k8s/up.sh's. Stop with down.sh <statedir>: always, it
# undoes the host changes the kubelet makes.
set -euo pipefail
KBIN=${1:?k8s bindir}; NODE=${2:?node dir}; ST=${3:?statedir}
REG=127.0.0.1:${REGISTRY_PORT:-5001}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$ST"/{registry,cni,pod-logs,kubelet,containerd,cni-ipam,logs} "$ST/certs.d/$REG"
: > "$ST/node-pids"
echo "$KBIN" > "$ST/k8s-bin"; echo "$NODE" > "$ST/node-dir"
t0=$(date +%s)
start() { # name, cmd...
  local name=$1; shift
  "$@" >"$ST/logs/$name.log" 2>&1 &
  echo "$name $!" >> "$ST/node-pids"
}

# --- registry (manifests live in memory: images are pushed again at each start)
start registry "$NODE/bin/crane" registry serve --address "$REG" --disk "$ST/registry"
for i in $(seq 1 100); do curl -sf "http://$REG/v2/" >/dev/null && break; sleep 0.1; done

# --- containerd: plain-HTTP loopback registry, runc without oom_score_adj rights, bridge CNI
printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REG" "$REG" \
  > "$ST/certs.d/$REG/hosts.toml"
cat > "$ST/containerd.toml" <<TOML
version = 3
root = "$ST/containerd/root"
state = "$ST/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$ST/containerd.sock"
[ttrpc]
  address = "$ST/containerd.sock.ttrpc"
[debug]
  address = "$ST/containerd-debug.sock"
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '$REG/pause:1'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '$ST/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false
          BinaryName = '/usr/sbin/runc'
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '$ST/cni'
  [plugins.'io.containerd.internal.v1.opt']
    path = '$ST/containerd/opt'
TOML
cat > "$ST/cni/10-bridge.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "gantry-node", "plugins": [{"type": "bridge", "bridge": "k8snode0",
  "isGateway": false, "ipMasq": false, "hairpinMode": false,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "dataDir": "$ST/cni-ipam"}}]}
JSON
PATH=$NODE/bin:$PATH start containerd "$NODE/bin/containerd" --config "$ST/containerd.toml"
for i in $(seq 1 100); do [ -S "$ST/containerd.sock" ] && break; sleep 0.1; done

# --- control plane
KWOK=0 bash "$HERE/../k8s/up.sh" "$KBIN" "$ST/cp" >&2

# --- kubelet: loopback address (so hostname-override), cgroupfs, lenient eviction for CI disks
cat > "$ST/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$ST/containerd.sock
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
podLogsDir: $ST/pod-logs
serializeImagePulls: false
registerNode: true
rotateCertificates: false
protectKernelDefaults: false
resolvConf: /etc/resolv.conf
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 10s
YAML
for k in vm.overcommit_memory kernel.panic kernel.panic_on_oops; do echo "$k $(sysctl -n $k)"; done > "$ST/sysctls"
start kubelet "$KBIN/kubelet" --config "$ST/kubelet.yaml" --kubeconfig "$ST/cp/kubeconfig" \
  --root-dir "$ST/kubelet" --cert-dir "$ST/kubelet/pki" --hostname-override localhost -v=1
K() { "$KBIN/kubectl" --kubeconfig "$ST/cp/kubeconfig" "$@"; }
for i in $(seq 1 600); do
  [ "$(K get node localhost -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  sleep 0.1
done
[ "$(K get node localhost -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] ||
  { echo "node not Ready; kubelet log:" >&2; tail -30 "$ST/logs/kubelet.log" >&2; exit 1; }
echo "node Ready in $(( $(date +%s) - t0 ))s; KUBECONFIG=$ST/cp/kubeconfig; registry $REG" >&2
