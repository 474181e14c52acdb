# The real nodes of the local control plane, sourced by scripts/testenv: kubelets built from the
# same Kubernetes module, Debian's containerd and runc, and a CNI bridge each, every node inside a
# network namespace of the project's own, so pods need and get no network beyond this machine.
#
#   host (127.0.0.1: apiserver)             network namespace ferry-node (node-real, zone-r)
#   bridge ferry-br0 10.250.0.1/24  <-veth->  10.250.0.2: kubelet :10250, containerd
#   socat 10.250.0.1:API_PORT -> apiserver    bridge ferry-cni0 10.251.0.0/24: pods
#                                   <-veth->  ferry-node2 (node-real-2, zone-r2): 10.250.0.3, pods 10.251.1.0/24
#                                   <-veth->  ferry-node3 (node-real-3, zone-r3): 10.250.0.4, pods 10.251.2.0/24
#
# The nodes meet on the host's bridge (switched, so the host forwards nothing: its ip_forward stays
# off), and each routes the others' pod ranges to them, so pods on different nodes reach each other
# by pod IP. Only the network is namespaced (nsenter --net, not `ip netns exec`, which would also
# unshare mounts and hide the kubelet's volume mounts from containerd). Kernel state that outlives a
# session — mounts, the namespaces, the veths and the bridge, loop devices — is found and removed
# by real_node_clean.
#
# Node 1 keeps the names of the time there was one real node (node-real, $state/node, process names
# kubelet and containerd); node N > 1 adds -N to them (node-real-2, $state/node2, kubelet-2).

real_node="node-real"
real_node_count=3
real_bridge="ferry-br0"
host_ip="10.250.0.1"
kubernetes_service_ip="10.0.0.1" # the `kubernetes` Service, as pods see the apiserver
all_pod_cidrs="10.251.0.0/16"
real_kubelet_port="${FERRY_REAL_KUBELET_PORT:-10250}"

# What real node N's names end with: nothing for node 1 (its names date from the time of one
# node), `-N` for the others.
node_suffix_of() { # N
  if [ "$1" = 1 ]; then echo ""; else echo "-$1"; fi
}

# Selects real node N (1-based): every function below acts on the selected node.
select_node() { # N
  node_index=$1
  local suffix
  suffix=$(node_suffix_of "$1")
  node_name="${real_node}${suffix}"
  node_suffix="$suffix"
  node_netns="ferry-node${suffix#-}"
  node_dir="$state/node${suffix#-}"
  node_ip="10.250.0.$(($1 + 1))"
  pod_cidr="10.251.$(($1 - 1)).0/24"
  node_zone="zone-r${suffix#-}"
  veth_host="ferry-h$(($1 - 1))"
  veth_node="ferry-n$(($1 - 1))"
  containerd_sock="$node_dir/containerd.sock"
}
select_node 1

in_node() { nsenter --net="/run/netns/$node_netns" "$@"; }
ctr_node() { ctr --address "$containerd_sock" -n k8s.io "$@"; }

# Every mount under a directory, deepest first.
mounts_under() { findmnt -rn -o TARGET | awk -v p="$1/" 'index($0, p) == 1' | sort -r; }

# Removes the real nodes' kernel state (pod mounts, containerd's rootfs and shm mounts, the network
# namespaces, veths and the bridge), whether this run or an earlier (killed) one made it — an
# earlier run with fewer nodes included. The agent's disks stay.
real_node_clean() {
  local index netns file
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    node_clean
  done
  select_node 1
  # Pod network namespaces are made by CNI under /run/netns as cni-<uuid>; ours are the ones whose
  # bridge is in our node namespaces, and nothing else on this machine makes cni-* namespaces.
  for netns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^cni-' || true); do
    ip netns delete "$netns" 2>/dev/null || true
  done
  ip link delete "$real_bridge" 2>/dev/null || true
  # The cgroups runc made for the nodes' containers (cgroupsPerQOS is off, so containerd puts them
  # under its namespace's name); rmdir removes only those whose processes are gone.
  for file in /sys/fs/cgroup/*/k8s.io; do
    if [ -d "$file" ]; then find "$file" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
}

node_clean() { # the selected node's containers, mounts, namespace and veth
  local target
  if [ -S "$containerd_sock" ] && ctr_node version >/dev/null 2>&1; then
    for target in $(ctr_node tasks ls -q 2>/dev/null); do ctr_node tasks kill -a -s SIGKILL "$target" >/dev/null 2>&1 || true; done
  fi
  # Container processes whose shim is gone (an earlier session) are still in runc's cgroups.
  pkill -9 -f "containerd-shim-runc-v2 -namespace k8s.io .*-address $containerd_sock" 2>/dev/null || true
  for target in $(mounts_under "$node_dir"); do umount -l "$target" 2>/dev/null || true; done
  ip netns delete "$node_netns" 2>/dev/null || true
  ip link delete "$veth_host" 2>/dev/null || true
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

# The selected node's kubelet identity (system:node:NAME) and serving certificate, in
# $pki/node[-N]-{client,serving}.{crt,key}.
make_node_pki() {
  local id="node${node_suffix}"
  [ -f "$pki/$id-client.crt" ] && [ -f "$pki/$id-serving.crt" ] && return 0
  (
    cd "$pki"
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:${node_name}" \
      -keyout "$id-client.key" -out "$id-client.csr" 2>/dev/null
    openssl x509 -req -in "$id-client.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out "$id-client.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=${node_name}" -keyout "$id-serving.key" -out "$id-serving.csr" 2>/dev/null
    printf 'subjectAltName=IP:%s,DNS:%s\nextendedKeyUsage=serverAuth\n' "$node_ip" "$node_name" > "$id-serving.ext"
    openssl x509 -req -in "$id-serving.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile "$id-serving.ext" -out "$id-serving.crt" 2>/dev/null
  )
}

# The host's bridge every node's veth is plugged into; the host's address on it is where the
# nodes reach the apiserver.
make_bridge() {
  ip link show "$real_bridge" >/dev/null 2>&1 && return 0
  ip link add "$real_bridge" type bridge
  ip addr add "$host_ip/24" dev "$real_bridge"
  ip link set "$real_bridge" up
}

# The selected node's namespace, its veth on the bridge, and routes to the other nodes' pods.
make_node_network() {
  local other
  ip netns add "$node_netns"
  ip link add "$veth_host" type veth peer name "$veth_node"
  ip link set "$veth_node" netns "$node_netns"
  ip link set "$veth_host" master "$real_bridge"
  ip link set "$veth_host" up
  in_node ip addr add "$node_ip/24" dev "$veth_node"
  in_node ip link set "$veth_node" up
  in_node ip link set lo up
  # The node forwards between its pods' bridge and the other nodes.
  in_node sysctl -qw net.ipv4.ip_forward=1
  for other in $(seq 1 "$real_node_count"); do
    [ "$other" = "$node_index" ] && continue
    in_node ip route replace "10.251.$((other - 1)).0/24" via "10.250.0.$((other + 1))"
  done
}

# A bridge whose addresses exist only in the node's namespace: no masquerade and no default route,
# so pods reach the node's namespace, each other and the other nodes' pods, the apiserver's
# in-cluster address (10.0.0.1) and the host's address on the bridge (the apiserver calling a
# webhook), nothing else. containerd re-reads it
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
              "routes": [{"dst": "${kubernetes_service_ip}/32"}, {"dst": "${host_ip}/32"}, {"dst": "${all_pod_cidrs}"}]}},
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
- name: ${node_name}
  user:
    client-certificate-data: $(base64 -w0 < "$pki/node${node_suffix}-client.crt")
    client-key-data: $(base64 -w0 < "$pki/node${node_suffix}-client.key")
contexts:
- name: ferry-testenv
  context: {cluster: ferry-testenv, user: ${node_name}}
current-context: ferry-testenv
EOF
  cat > "$node_dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node_ip}
port: ${real_kubelet_port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $pki/node${node_suffix}-serving.crt
tlsPrivateKeyFile: $pki/node${node_suffix}-serving.key
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
node_ready() { # name
  [ "$(kctl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# Every process name the real nodes run under (node 1's without a suffix).
real_node_processes() {
  local index suffix
  echo api-forwarder
  for index in $(seq 1 "$real_node_count"); do
    suffix=$(node_suffix_of "$index")
    echo "kubelet$suffix" "containerd$suffix" "service-forwarder$suffix"
  done
}

import_images() {
  log "importing images into $node_name's containerd (built when their inputs changed)"
  "$repo/scripts/images" import --address "$containerd_sock" >&2
}

# Pods reach the apiserver as in-cluster clients do, at the `kubernetes` Service (10.0.0.1:443): with
# no kube-proxy, that address lives in each node's namespace and is forwarded to the apiserver. And
# the apiserver calls webhooks served by pods at their pod IPs (--enable-aggregator-routing), routed
# to the node that runs them.
start_pod_network_paths() {
  write_cni_config
  in_node ip addr replace "${kubernetes_service_ip}/32" dev lo
  start "service-forwarder$node_suffix" nsenter --net="/run/netns/$node_netns" \
    socat "TCP-LISTEN:443,bind=${kubernetes_service_ip},fork,reuseaddr" "TCP:${host_ip}:${api_port}"
  ip route replace "$pod_cidr" via "$node_ip" dev "$real_bridge"
}

# Whether the selected node runs as this script would start it (a kubelet an older version of this
# script started without its supervisor, or a layout of fewer nodes, is started again).
node_running() {
  running "kubelet$node_suffix" && running "containerd$node_suffix" && node_ready "$node_name" \
    && kubelet_supervised && ip link show "$veth_host" 2>/dev/null | grep -q "master $real_bridge"
}

start_real_nodes() {
  local index name all_running=1
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    node_running || all_running=0
  done
  if [ "$all_running" = 1 ]; then
    log "real nodes already running"
    for index in $(seq 1 "$real_node_count"); do
      select_node "$index"
      start_pod_network_paths
      import_images
    done
    select_node 1
    return 0
  fi
  log "starting $real_node_count real nodes (containerd, kubelet)"
  for name in $(real_node_processes); do stop_process "$name"; done
  real_node_clean
  make_bridge
  # The nodes reach the apiserver (on loopback) through the host's address on the bridge.
  start api-forwarder socat "TCP-LISTEN:${api_port},bind=${host_ip},fork,reuseaddr" "TCP:127.0.0.1:${api_port}"
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    make_node_pki
    make_node_network
    write_node_config
    start_pod_network_paths
    start "containerd$node_suffix" nsenter --net="/run/netns/$node_netns" containerd --config "$node_dir/containerd.toml"
  done
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    wait_for "$node_name's containerd" 60 containerd_ready
    import_images
    # Supervised, as systemd runs a node's kubelet: a test that kills it sees it come back.
    start_supervised "kubelet$node_suffix" nsenter --net="/run/netns/$node_netns" "$bin/kubelet" --config "$node_dir/kubelet.yaml" \
      --kubeconfig "$node_dir/kubeconfig" --hostname-override "$node_name" --node-ip "$node_ip" \
      --root-dir "$node_dir/kubelet" --volume-plugin-dir "$node_dir/volume-plugins" \
      --node-labels "ferry.dev/real-node=true,topology.kubernetes.io/zone=$node_zone" --v 2
  done
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    wait_for "$node_name Ready" 120 node_ready "$node_name"
  done
  select_node 1
}

kubelet_supervised() {
  tr '\0' ' ' < "/proc/$(cat "$pids/kubelet$node_suffix.pid")/cmdline" | grep -q '^bash -c while'
}

stop_real_nodes() {
  local name index
  for index in $(seq 1 "$real_node_count"); do stop_process "kubelet$(node_suffix_of "$index")"; done
  real_node_clean
  for name in $(real_node_processes); do stop_process "$name"; done
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    rm -rf "$node_dir"
  done
  select_node 1
}
