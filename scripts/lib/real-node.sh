# The real node of the local control plane, sourced by scripts/testenv: a kubelet built from the
# same Kubernetes module, Debian's containerd and runc, and a CNI bridge, all inside a network
# namespace of the project's own, so pods need and get no network beyond this machine.
#
#   host (127.0.0.1: apiserver)                     network namespace ferry-node
#   socat 10.250.0.1:API_PORT -> 127.0.0.1:API_PORT  <-veth->  10.250.0.2: kubelet :10250, containerd
#                                                              bridge ferry-cni0 10.251.0.1/24: pods
#
# Only the network is namespaced (nsenter --net, not `ip netns exec`, which would also unshare mounts
# and hide the kubelet's volume mounts from containerd). Kernel state that outlives a session —
# mounts, the namespaces, the veth pair, loop devices — is found and removed by real_node_clean.

real_node="node-real"
node_netns="ferry-node"
veth_host="ferry-h0"
veth_node="ferry-n0"
host_ip="10.250.0.1"
node_ip="10.250.0.2"
pod_cidr="10.251.0.0/24"
kubernetes_service_ip="10.0.0.1" # the `kubernetes` Service, as pods see the apiserver
real_kubelet_port="${FERRY_REAL_KUBELET_PORT:-10250}"
node_dir="$state/node"
containerd_sock="$node_dir/containerd.sock"

in_node() { nsenter --net="/run/netns/$node_netns" "$@"; }
ctr_node() { ctr --address "$containerd_sock" -n k8s.io "$@"; }

# Every mount under a directory, deepest first.
mounts_under() { findmnt -rn -o TARGET | awk -v p="$1/" 'index($0, p) == 1' | sort -r; }

# Removes the real node's kernel state (pod mounts, containerd's rootfs and shm mounts, the network
# namespaces and veth), whether this run or an earlier (killed) one made it. The agent's disks stay.
real_node_clean() {
  local target netns file
  if [ -S "$containerd_sock" ] && ctr_node version >/dev/null 2>&1; then
    for target in $(ctr_node tasks ls -q 2>/dev/null); do ctr_node tasks kill -a -s SIGKILL "$target" >/dev/null 2>&1 || true; done
  fi
  # Container processes whose shim is gone (an earlier session) are still in runc's cgroups.
  pkill -9 -f "containerd-shim-runc-v2 -namespace k8s.io .*-address $containerd_sock" 2>/dev/null || true
  for target in $(mounts_under "$node_dir"); do umount -l "$target" 2>/dev/null || true; done
  # Pod network namespaces are made by CNI under /run/netns as cni-<uuid>; ours are the ones whose
  # bridge is in our node namespace, and nothing else on this machine makes cni-* namespaces.
  for netns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^cni-' || true); do
    ip netns delete "$netns" 2>/dev/null || true
  done
  ip netns delete "$node_netns" 2>/dev/null || true
  ip link delete "$veth_host" 2>/dev/null || true
  # The cgroups runc made for the node's containers (cgroupsPerQOS is off, so containerd puts them
  # under its namespace's name); rmdir removes only those whose processes are gone.
  for file in /sys/fs/cgroup/*/k8s.io; do
    if [ -d "$file" ]; then find "$file" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
}

# Unmounts everything under a directory and detaches the loop devices over files in it.
unmount_and_detach_under() { # dir
  local target device
  for target in $(mounts_under "$1"); do umount -l "$target" 2>/dev/null || true; done
  for device in $(losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v p="$1/" 'index($2, p) == 1 {print $1}'); do
    losetup -d "$device" 2>/dev/null || true
  done
}

# Removes the disks of the agent's real-node volumes: their mounts and loop devices (the files go with
# the state directory).
disks_clean() { unmount_and_detach_under "$state/disks"; }

make_node_pki() { # the kubelet's client identity (system:node:node-real) and serving certificate
  [ -f "$pki/node-client.crt" ] && [ -f "$pki/node-serving.crt" ] && return 0
  (
    cd "$pki"
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:${real_node}" \
      -keyout node-client.key -out node-client.csr 2>/dev/null
    openssl x509 -req -in node-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out node-client.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=${real_node}" -keyout node-serving.key -out node-serving.csr 2>/dev/null
    printf 'subjectAltName=IP:%s,DNS:%s\nextendedKeyUsage=serverAuth\n' "$node_ip" "$real_node" > node-serving.ext
    openssl x509 -req -in node-serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile node-serving.ext -out node-serving.crt 2>/dev/null
  )
}

make_node_network() {
  ip netns add "$node_netns"
  ip link add "$veth_host" type veth peer name "$veth_node"
  ip link set "$veth_node" netns "$node_netns"
  ip addr add "$host_ip/30" dev "$veth_host"
  ip link set "$veth_host" up
  in_node ip addr add "$node_ip/30" dev "$veth_node"
  in_node ip link set "$veth_node" up
  in_node ip link set lo up
}

# A bridge whose addresses exist only in the node's namespace: no masquerade and no default route,
# so pods reach the node's namespace, each other, the apiserver's in-cluster address (10.0.0.1) and
# the host end of the veth (the apiserver calling a webhook), nothing else. containerd re-reads it
# when it changes.
write_cni_config() {
  mkdir -p "$node_dir/cni/net.d" "$node_dir/cni/ipam"
  cat > "$node_dir/cni/net.d/10-ferry.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ferry-pods",
  "plugins": [
    {"type": "bridge", "bridge": "ferry-cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$node_dir/cni/ipam", "ranges": [[{"subnet": "$pod_cidr"}]],
              "routes": [{"dst": "${kubernetes_service_ip}/32"}, {"dst": "${host_ip}/32"}]}},
    {"type": "loopback"}
  ]
}
EOF
}

write_node_config() {
  mkdir -p "$node_dir/cni/net.d" "$node_dir/cni/ipam" "$node_dir/kubelet" "$node_dir/pod-logs" \
    "$node_dir/containerd" "$node_dir/volume-plugins"
  write_cni_config
  cat > "$node_dir/containerd.toml" <<EOF
version = 2
root = "$node_dir/containerd/root"
state = "$node_dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$containerd_sock"
[ttrpc]
  address = "$containerd_sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$node_dir/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "ferry.local/pause:dev"
  # The sandbox may not lower oom_score_adj here; without this every sandbox fails to start.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node_dir/cni/net.d"
EOF
  cat > "$node_dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ferry-testenv
  cluster:
    server: https://${host_ip}:${api_port}
    tls-server-name: localhost
    certificate-authority-data: $(base64 -w0 < "$pki/ca.crt")
users:
- name: ${real_node}
  user:
    client-certificate-data: $(base64 -w0 < "$pki/node-client.crt")
    client-key-data: $(base64 -w0 < "$pki/node-client.key")
contexts:
- name: ferry-testenv
  context: {cluster: ferry-testenv, user: ${real_node}}
current-context: ferry-testenv
EOF
  cat > "$node_dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node_ip}
port: ${real_kubelet_port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $pki/node-serving.crt
tlsPrivateKeyFile: $pki/node-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$containerd_sock
podLogsDir: $node_dir/pod-logs
# This machine: cgroup v1, cgroupfs, no QoS hierarchy, swap allowed.
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
# Pods get no DNS servers: they have nothing to resolve and no network to reach.
resolvConf: ""
registerWithTaints:
- {key: ferry.dev/real-node, value: "true", effect: NoSchedule}
# The images are imported, never pulled: never collect them, and never evict on this shared disk.
# Disk pressure makes the kubelet delete unused images, the pause image among them (containerd 1.6
# does not pin it), and then no pod starts: so the thresholds are absolute and small (1% of a
# 252 GB disk was 2.5 GB, crossed here with 2.6 GB still free).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "100Mi", imagefs.available: "100Mi", nodefs.inodesFree: "1000"}
# Volume usage in the stats summary is fresh enough for autoresize tests.
volumeStatsAggPeriod: 5s
# The kubelet grows a mounted CSI volume's file system (online NodeExpandVolume) when it next syncs
# the pod: with the default 1m every online growth waited up to 90 s.
syncFrequency: 10s
serializeImagePulls: false
shutdownGracePeriod: 0s
EOF
}

containerd_ready() { ctr_node version; }
real_node_ready() {
  [ "$(kctl get node "$real_node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

import_images() {
  log "importing images into the node's containerd (built when their inputs changed)"
  "$repo/scripts/images" import --address "$containerd_sock" >&2
}

# Pods reach the apiserver as in-cluster clients do, at the `kubernetes` Service (10.0.0.1:443): with
# no kube-proxy, that address lives in the node's namespace and is forwarded to the apiserver. And
# the apiserver calls webhooks served by pods at their pod IPs (--enable-aggregator-routing), routed
# through the node's namespace.
start_pod_network_paths() {
  write_cni_config
  in_node ip addr replace "${kubernetes_service_ip}/32" dev lo
  start service-forwarder nsenter --net="/run/netns/$node_netns" \
    socat "TCP-LISTEN:443,bind=${kubernetes_service_ip},fork,reuseaddr" "TCP:${host_ip}:${api_port}"
  ip route replace "$pod_cidr" via "$node_ip" dev "$veth_host"
}

start_real_node() {
  # (A kubelet an older version of this script started without its supervisor is started again.)
  if running kubelet && running containerd && real_node_ready && kubelet_supervised; then
    log "real node already running"
    start_pod_network_paths
    import_images
    return 0
  fi
  log "starting the real node ($real_node: containerd, kubelet)"
  stop_process kubelet
  stop_process containerd
  stop_process api-forwarder
  stop_process service-forwarder
  real_node_clean
  make_node_pki
  make_node_network
  write_node_config
  # The node reaches the apiserver (on loopback) through the host end of the veth.
  start api-forwarder socat "TCP-LISTEN:${api_port},bind=${host_ip},fork,reuseaddr" "TCP:127.0.0.1:${api_port}"
  stop_process service-forwarder
  start_pod_network_paths
  start containerd nsenter --net="/run/netns/$node_netns" containerd --config "$node_dir/containerd.toml"
  wait_for containerd 60 containerd_ready
  import_images
  # Supervised, as systemd runs a node's kubelet: a test that kills it sees it come back.
  start_supervised kubelet nsenter --net="/run/netns/$node_netns" "$bin/kubelet" --config "$node_dir/kubelet.yaml" \
    --kubeconfig "$node_dir/kubeconfig" --hostname-override "$real_node" --node-ip "$node_ip" \
    --root-dir "$node_dir/kubelet" --volume-plugin-dir "$node_dir/volume-plugins" \
    --node-labels "ferry.dev/real-node=true,topology.kubernetes.io/zone=zone-r" --v 2
  wait_for "the real node Ready" 120 real_node_ready
}

kubelet_supervised() {
  tr '\0' ' ' < "/proc/$(cat "$pids/kubelet.pid")/cmdline" | grep -q '^bash -c while'
}

stop_real_node() {
  stop_process kubelet
  real_node_clean
  stop_process containerd
  stop_process api-forwarder
  stop_process service-forwarder
  rm -rf "$node_dir"
}
