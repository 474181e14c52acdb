# shellcheck shell=bash
# The Kubernetes minors the local control plane can run, one checked-in Go module each
# (scripts/k8s/v1.MINOR/{go.mod,go.sum,VERSION}, made by regen-gomod.sh). Sourced by build.sh,
# scripts/testenv and scripts/test-versions.
#
#   k8s_minors                  prints the minors, oldest first (v1.34 v1.35 ...)
#   k8s_resolve [REQUEST]       sets k8s_dir, k8s_minor (v1.37), k8s_version (v1.37.2) for REQUEST
#                               (default $FERRY_K8S_VERSION, else the newest minor). REQUEST is
#                               v1.37, 1.37, or a full v1.37.2 (which must be the checked-in patch).

k8s_modules_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The other Go tools of the test bed, the same for every minor (build.sh).
# kwok joins a minor's module where it builds against its libraries (v1.37: v0.8.0, regen-gomod.sh);
# the other minors install v0.7.0 on its own.
kwok_version=v0.8.0
kwok_standalone_version=v0.7.0
helm_version=v3.22.0
# Prometheus and promtool (the Go module's v0.3MM.P is Prometheus 3.MM.P), built without service
# discovery (`remove_all_sd`: static and file targets only): the autoscaler's usage from Prometheus
# is tested against it, and promtool checks the chart's alerting rules.
prometheus_version=v0.316.0
# prometheus-operator (cmd/operator, cmd/prometheus-config-reloader and the CRDs of its
# example/prometheus-operator-crd), for tests of StatefulSets another operator owns (#58); built from
# its own checked-in module, scripts/k8s/prometheus-operator (regen-prometheus-operator.sh: the
# release's go.mod replaces its pkg/apis and pkg/client with local paths, so `go install @version`
# refuses it). v0.93.1 is the newest that resolves here: the proxy serves the main module up to
# v0.94.1 but refuses v0.95.x, and has no pkg/client v0.94.x; it wants Go 1.26.0 (the machine's).
prometheus_operator_version=v0.93.1
# ECK (Elastic Cloud on Kubernetes), its operator and CRDs, for tests of StatefulSets another
# operator owns (#58): the second real owner, its Elasticsearch a stand-in image
# (`ferry.local/es-standin:dev`, scripts/lib/ferry_images.py). v3.5.0 is the newest the proxy
# serves (no v2 module); built from scripts/k8s/eck-operator, it wants Go 1.26.0.
eck_version=v3.5.0
# The upstream CSI sidecars the real node's CSI driver runs behind (scripts/lib/csi.sh). The module
# proxy here serves external-resizer v2.2.0 and v2.3.0 but not v2.2.1, and no version of
# node-driver-registrar (its v2 tags lack the /v2 module path): the driver registers itself with the
# kubelet's plugin registry, as that registrar would. external-provisioner v6.3.0 does not build
# against client-go v0.37 (its CSIStorageCapacity informer bridge); v6.4.0 is made for it.
csi_sidecars=(
  "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner@v6.4.0"
  "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher@v4.12.0"
  "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer@v2.2.0"
  "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter@v8.6.0"
  "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller@v8.6.0"
)
# The VolumeSnapshot CRDs come from the snapshotter's client module, at the snapshotter's version.
snapshot_crds_module="github.com/kubernetes-csi/external-snapshotter/client/v8@v8.6.0"

k8s_minors() {
  local dir
  for dir in "$k8s_modules_dir"/v1.*/; do
    [ -f "$dir/VERSION" ] && basename "$dir"
  done | sort -V
}

k8s_resolve() {
  local request="${1:-${FERRY_K8S_VERSION:-}}" patch=""
  if [ -z "$request" ]; then
    k8s_minor=$(k8s_minors | tail -n 1)
  elif [[ "$request" =~ ^v?1\.([0-9]+)(\.([0-9]+))?$ ]]; then
    k8s_minor="v1.${BASH_REMATCH[1]}"
    patch="${BASH_REMATCH[3]}"
  else
    echo "FERRY_K8S_VERSION=$request: not a Kubernetes version (want e.g. v1.37)" >&2
    return 2
  fi
  k8s_dir="$k8s_modules_dir/$k8s_minor"
  if [ ! -f "$k8s_dir/VERSION" ]; then
    echo "Kubernetes $k8s_minor is not supported here; supported: $(k8s_minors | tr '\n' ' ')" >&2
    return 2
  fi
  k8s_version=$(cat "$k8s_dir/VERSION")
  if [ -n "$patch" ] && [ "$k8s_version" != "$k8s_minor.$patch" ]; then
    echo "Kubernetes $request: the module for $k8s_minor is $k8s_version (scripts/k8s/regen-gomod.sh $k8s_minor.$patch to change it)" >&2
    return 2
  fi
}
