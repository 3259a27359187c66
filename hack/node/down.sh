#!/usr/bin/env bash
# Stops what up.sh started and undoes the kubelet's host changes: pods, containers, mounts,
# the bridge, iptables chains, cgroups, sysctls and the fixed host paths.
ST=${1:?statedir}
[ -f "$ST/node-pids" ] || exit 0
KBIN=$(cat "$ST/k8s-bin"); NODE=$(cat "$ST/node-dir")
K() { timeout 20 "$KBIN/kubectl" --kubeconfig "$ST/cp/kubeconfig" "$@"; }
pid() { awk -v n="$1" '$1==n{print $2}' "$ST/node-pids"; }
# Pods first, so the kubelet tears down their containers, mounts and network namespaces.
K delete pods --all -A --grace-period=0 --force --wait=false >/dev/null 2>&1
for i in $(seq 1 100); do [ -z "$(ls "$ST/kubelet/pods" 2>/dev/null)" ] && break; sleep 0.2; done
kill "$(pid kubelet)" 2>/dev/null; sleep 1; kill -9 "$(pid kubelet)" 2>/dev/null
CTR() { timeout 20 "$NODE/bin/ctr" -a "$ST/containerd.sock" -n k8s.io "$@"; }
for t in $(CTR t ls -q 2>/dev/null); do CTR t kill -s KILL "$t" >/dev/null 2>&1; done; sleep 0.5
for t in $(CTR t ls -q 2>/dev/null); do CTR t rm -f "$t" >/dev/null 2>&1; done
for c in $(CTR c ls -q 2>/dev/null); do CTR c rm "$c" >/dev/null 2>&1; done
kill "$(pid containerd)" 2>/dev/null
bash "$(dirname "$0")/../k8s/down.sh" "$ST/cp"
kill "$(pid registry)" 2>/dev/null; sleep 1
for n in containerd registry; do kill -9 "$(pid $n)" 2>/dev/null; done
pkill -9 -f "containerd-shim-runc-v2 -namespace k8s.io .*-address $ST/containerd.sock" 2>/dev/null
# Mounts under the state dir, deepest first (kubelet's root-dir bind, volumes, shm, rootfs).
grep -F " $ST" /proc/self/mounts | awk '{print $2}' | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
grep -F " /run/netns/cni-" /proc/self/mounts | awk '{print $2}' | while read -r m; do umount "$m"; rm -f "$m"; done
ip link del k8snode0 2>/dev/null
for ipt in iptables ip6tables; do
  $ipt -D INPUT -j KUBE-FIREWALL 2>/dev/null; $ipt -D OUTPUT -j KUBE-FIREWALL 2>/dev/null
  for tc in filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT; do
    $ipt -t "${tc%%:*}" -F "${tc#*:}" 2>/dev/null; $ipt -t "${tc%%:*}" -X "${tc#*:}" 2>/dev/null
  done
done
# The kubelet's cgroups (cgroupfs driver): empty directories, deepest first.
for c in /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods; do
  [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
done
# The sysctls the kubelet set, back to the values saved by up.sh.
[ -f "$ST/sysctls" ] && while read -r k v; do sysctl -qw "$k=$v" 2>/dev/null; done < "$ST/sysctls"
rm -rf /run/containerd /var/lib/cni /var/lib/kubelet
rm -f "$ST/node-pids"
exit 0
