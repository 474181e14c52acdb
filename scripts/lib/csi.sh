# The real nodes' CSI storage, sourced by scripts/testenv after real-node.sh: Ferry's test CSI driver
# (crates/csi-driver: file systems on loop devices) run twice, as block.csi.ferry.dev and as
# attach.csi.ferry.dev (whose CSIDriver says attachRequired, so its volumes go through
# VolumeAttachments), each behind the unmodified upstream sidecars built by scripts/k8s/build.sh:
# external-provisioner (with topology) and external-resizer, and external-attacher for the second.
#
# Each driver runs one instance per real node (its node plugin: NodeGetInfo reports the node's zone
# and name, and a volume is staged only on a node that can reach it), all sharing one state
# directory; node 1's instance also serves the sidecars (the controller). A volume is bound to the
# zone it was made in (one real node per zone) or, in a class with `binding: node`, to its node.
# Each instance is registered with its kubelet through the plugin registry by scripts/csi-registrar
# (node-driver-registrar's job; the module proxy serves no version of it), so every CSINode lists it.
#
# The drivers' volumes live under $state/csi/<driver>/state; their loop devices and mounts are
# kernel state that outlives a session, found and removed by csi_clean.

csi_dir="$state/csi"
csi_drivers=(block attach)

csi_name() { echo "$1.csi.ferry.dev"; }
csi_socket() { # driver [node suffix]: node 1's socket keeps its name from the time of one node
  if [ -z "${2:-}" ]; then echo "$csi_dir/$1/csi.sock"; else echo "$csi_dir/$1/csi$2.sock"; fi
}
csi_processes() { # every process name start_csi uses
  local driver index suffix
  echo csi-snapshot-controller
  for driver in "${csi_drivers[@]}"; do
    for index in $(seq 1 "$real_node_count"); do
      suffix=$(node_suffix_of "$index")
      echo "csi-$driver$suffix" "csi-$driver-registrar$suffix"
    done
    echo "csi-$driver-provisioner" "csi-$driver-resizer"
    [ "$driver" != attach ] || echo "csi-$driver-attacher"
    [ "$driver" != block ] || echo "csi-$driver-snapshotter"
  done
}

# VolumeSnapshot, VolumeSnapshotContent and VolumeSnapshotClass (not the group snapshot CRDs), from
# the Go module cache (downloaded through the module proxy when missing), and one class for the
# block driver.
apply_snapshot_crds() {
  local dir kind
  dir=$(cd / && go mod download -json "$snapshot_crds_module" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/config/crd" ] || die "no VolumeSnapshot CRDs in $snapshot_crds_module (got '$dir')"
  for kind in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
    kctl apply --server-side --force-conflicts -f "$dir/config/crd/snapshot.storage.k8s.io_$kind.yaml" >/dev/null
  done
  for kind in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
    kctl wait --for condition=established --timeout 60s "crd/$kind.snapshot.storage.k8s.io" >/dev/null
  done
  kctl apply -f - >/dev/null <<YAML
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: ferry-block-snapshots
driver: $(csi_name block)
deletionPolicy: Delete
YAML
}

# The block driver's VolumeAttributesClasses: its one mutable parameter, readOnly, applied to the
# mounted file system at once (ControllerModifyVolume through the external-resizer).
apply_attributes_classes() {
  local mode
  for mode in writable read-only; do
    kctl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata:
  name: ferry-block-$mode
driverName: $(csi_name block)
parameters:
  readOnly: "$([ "$mode" = read-only ] && echo true || echo false)"
YAML
  done
}

csi_registered() { # every driver is listed by the selected real node's CSINode
  local listed driver
  listed=" $(kctl get csinode "$node_name" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null) "
  for driver in "${csi_drivers[@]}"; do
    [[ "$listed" == *" $(csi_name "$driver") "* ]] || return 1
  done
}

# Started again whenever it exits, as the kubelet restarts a container: a sidecar exits when it
# loses its driver (a driver killed in a test), and a killed driver comes back.
start_supervised() { # name command...
  local name=$1; shift
  start "$name" bash -c 'while :; do "$@"; echo "[testenv] exited ($?); starting again in 1 s"; sleep 1; done' "$name" "$@"
}

apply_csi_drivers() {
  local driver attach
  for driver in "${csi_drivers[@]}"; do
    attach=false
    [ "$driver" != attach ] || attach=true
    kctl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: $(csi_name "$driver")
spec:
  attachRequired: ${attach}
  podInfoOnMount: false
  volumeLifecycleModes: [Persistent]
  fsGroupPolicy: File
YAML
  done
}

start_csi() {
  local driver name socket flags index
  log "starting the CSI drivers and sidecars on $real_node_count real nodes (${csi_drivers[*]})"
  apply_csi_drivers
  apply_snapshot_crds
  apply_attributes_classes
  start_supervised csi-snapshot-controller "$bin/snapshot-controller" --kubeconfig "$kubeconfig" \
    --leader-election=false --v 2
  for driver in "${csi_drivers[@]}"; do
    name=$(csi_name "$driver")
    mkdir -p "$csi_dir/$driver"
    flags=()
    [ "$driver" != attach ] || flags+=(--attach-required)
    for index in $(seq 1 "$real_node_count"); do
      select_node "$index"
      socket=$(csi_socket "$driver" "$node_suffix")
      stop_if_rebuilt "csi-$driver$node_suffix" "$CARGO_TARGET_DIR/debug/ferry-csi"
      start_supervised "csi-$driver$node_suffix" env RUST_LOG="${RUST_LOG:-info}" "$CARGO_TARGET_DIR/debug/ferry-csi" \
        --driver-name "$name" --endpoint "$socket" --node-id "$node_name" --zone "$node_zone" \
        --state-dir "$csi_dir/$driver/state" "${flags[@]}"
      wait_for "the $name socket of $node_name" 30 test -S "$socket"
      start_supervised "csi-$driver-registrar$node_suffix" "$bin/csi-registrar" --driver-name "$name" --csi-address "$socket" \
        --registration-socket "$node_dir/kubelet/plugins_registry/$name-reg.sock"
    done
    # The controller's sidecars talk to node 1's instance. The provisioner passes the driver the
    # topology of the node the scheduler picked only (strict), so a node-bound volume learns its node.
    select_node 1
    socket=$(csi_socket "$driver")
    start_supervised "csi-$driver-provisioner" "$bin/csi-provisioner" --csi-address "$socket" --kubeconfig "$kubeconfig" \
      --leader-election=false --feature-gates Topology=true --strict-topology --timeout 60s --v 2
    start_supervised "csi-$driver-resizer" "$bin/csi-resizer" --csi-address "$socket" --kubeconfig "$kubeconfig" \
      --leader-election=false --handle-volume-inuse-error=true --timeout 60s --v 2
    if [ "$driver" = block ]; then
      start_supervised "csi-$driver-snapshotter" "$bin/csi-snapshotter" --csi-address "$socket" --kubeconfig "$kubeconfig" \
        --leader-election=false --timeout 60s --v 2
    fi
    if [ "$driver" = attach ]; then
      start_supervised "csi-$driver-attacher" "$bin/csi-attacher" --csi-address "$socket" --kubeconfig "$kubeconfig" \
        --leader-election=false --timeout 60s --v 2
    fi
  done
  for index in $(seq 1 "$real_node_count"); do
    select_node "$index"
    wait_for "the CSI drivers in CSINode $node_name" 60 csi_registered
  done
  select_node 1
}

stop_csi() {
  local name
  for name in $(csi_processes); do stop_process "$name"; done
}

# Unmounts and detaches the drivers' volumes (the kubelet's mounts of them go with real_node_clean).
csi_clean() { unmount_and_detach_under "$csi_dir"; }
