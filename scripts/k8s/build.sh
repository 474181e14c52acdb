#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet (from the checked-in Go
# module of one minor, scripts/k8s/v1.MINOR), kwok, helm, the CSI sidecars, prometheus and
# prometheus-operator (with its config reloader and CRDs) and ECK's operator into a cache outside the
# repository, keyed by version and the go.sum hash. Prints the bin directory. A second run with the
# same inputs does nothing. Helm, kwok and the sidecars are built in the same `go build` as Kubernetes
# when the minor's module requires them (regen-gomod.sh decides), so they share their compiled
# client-go; otherwise helm and kwok are installed on their own (kwok at kwok_standalone_version:
# v0.7 does not build against the newer kubelet libraries), and the sidecars are built from the
# newest minor's module.
#   FERRY_K8S_VERSION=v1.35 scripts/k8s/build.sh     (default: the newest minor in scripts/k8s)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$here/versions.sh"
k8s_resolve "${FERRY_K8S_VERSION:-}"
key="${k8s_version}-$(sha256sum "$k8s_dir/go.sum" | cut -c1-12)"
cache_root="${FERRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferry}"
bin="$cache_root/testenv/$key/bin"
mkdir -p "$bin"

helm_version_flag="-X helm.sh/helm/v3/internal/version.version=${helm_version}"
helm_built() { [ "$("$bin/helm" version --template '{{.Version}}' 2>/dev/null)" = "$helm_version" ]; }
helm_in_module=0
grep -qE "^\s*helm\.sh/helm/v3 ${helm_version}( |$)" "$k8s_dir/go.mod" && helm_in_module=1
kwok_in_module=0
grep -qE "^\s*sigs\.k8s\.io/kwok ${kwok_version}( |$)" "$k8s_dir/go.mod" && kwok_in_module=1

packages=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
  [ -x "$bin/$b" ] || packages+=("k8s.io/kubernetes/cmd/$b")
done
if [ "$helm_in_module" = 1 ] && ! helm_built; then packages+=(helm.sh/helm/v3/cmd/helm); fi
if [ "$kwok_in_module" = 1 ] && [ ! -x "$bin/kwok" ]; then packages+=(sigs.k8s.io/kwok/cmd/kwok); fi
# A sidecar binary is named after its package's last element (csi-provisioner, ...).
csi_dir="$k8s_dir"
grep -q "kubernetes-csi/external-provisioner" "$k8s_dir/go.mod" || csi_dir="$k8s_modules_dir/$(k8s_minors | tail -n 1)"
csi_packages=()
for sidecar in "${csi_sidecars[@]}"; do
  package=${sidecar%@*}
  [ -x "$bin/${package##*/}" ] || csi_packages+=("$package")
done
if [ "$csi_dir" = "$k8s_dir" ]; then packages+=("${csi_packages[@]}"); csi_packages=(); fi
if [ "${#packages[@]}" -gt 0 ]; then
  echo "building ${packages[*]##*/} (Kubernetes ${k8s_version}) into $bin (cold: 10-25 min on 2 cores)" >&2
  minor=${k8s_version#v1.}; minor=${minor%%.*}
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w ${helm_version_flag}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done
  (cd "$k8s_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/" "${packages[@]}")
fi
if [ "${#csi_packages[@]}" -gt 0 ]; then
  echo "building the CSI sidecars from $csi_dir (they do not build against Kubernetes ${k8s_version}'s libraries)" >&2
  (cd "$csi_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/" "${csi_packages[@]}")
fi
if [ ! -x "$bin/kwok" ]; then
  echo "building kwok ${kwok_standalone_version} on its own" >&2
  # kwok's own go.mod needs no replaces; install it in module mode outside our module.
  (cd / && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${kwok_standalone_version}")
fi
# kwok's stages (which pods and nodes it fakes, and how), from the kwok module the binary was built from.
if [ ! -f "$bin/../kwok-stages/pod-ready.yaml" ]; then
  if [ "$kwok_in_module" = 1 ]; then
    kwok_dir=$(cd "$k8s_dir" && go list -m -json sigs.k8s.io/kwok | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')
  else
    kwok_dir=$(cd / && go list -m -json "sigs.k8s.io/kwok@${kwok_standalone_version}" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')
  fi
  mkdir -p "$bin/../kwok-stages"
  cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
     "$kwok_dir"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-ready.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-complete.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-delete.yaml "$bin/../kwok-stages/"
fi
# The test CSI driver's kubelet registration (scripts/csi-registrar), keyed by its source and go.sum.
registrar_dir="$here/../csi-registrar"
registrar_key=$(cat "$registrar_dir/main.go" "$registrar_dir/go.sum" | sha256sum | cut -c1-16)
if [ "$(cat "$bin/csi-registrar.key" 2>/dev/null)" != "$registrar_key" ]; then
  echo "building csi-registrar" >&2
  (cd "$registrar_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/csi-registrar" .)
  echo "$registrar_key" > "$bin/csi-registrar.key"
fi
if ! helm_built; then
  echo "building helm ${helm_version} on its own (tests install and upgrade charts with it)" >&2
  (cd / && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath \
    -ldflags "-s -w ${helm_version_flag}" "helm.sh/helm/v3/cmd/helm@${helm_version}")
fi
if [ "$(cat "$bin/prometheus.version" 2>/dev/null)" != "$prometheus_version" ]; then
  echo "building prometheus and promtool ${prometheus_version} (without service discovery)" >&2
  (cd / && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${prometheus_version}" \
    "github.com/prometheus/prometheus/cmd/prometheus@${prometheus_version}" \
    "github.com/prometheus/prometheus/cmd/promtool@${prometheus_version}")
  echo "$prometheus_version" > "$bin/prometheus.version"
fi
# prometheus-operator, its config reloader and its CRDs, from the checked-in module
# scripts/k8s/prometheus-operator (regen-prometheus-operator.sh), keyed by version and go.sum.
operator_dir="$here/prometheus-operator"
operator_key="${prometheus_operator_version}-$(sha256sum "$operator_dir/go.sum" | cut -c1-12)"
if [ "$(cat "$bin/prometheus-operator.version" 2>/dev/null)" != "$operator_key" ]; then
  if ! grep -qE "^\s*github\.com/prometheus-operator/prometheus-operator ${prometheus_operator_version}( |$)" "$operator_dir/go.mod"; then
    echo "scripts/k8s/prometheus-operator is not at ${prometheus_operator_version}: run scripts/k8s/regen-prometheus-operator.sh" >&2
    exit 1
  fi
  echo "building prometheus-operator and prometheus-config-reloader ${prometheus_operator_version}" >&2
  operator_pkg=github.com/prometheus-operator/prometheus-operator
  # The version as upstream's Makefile sets it (its VERSION file has no leading v); no build date,
  # so a rebuild gives the same bytes and the prometheus image (ferry_images.py) the same digest.
  ldflags="-s -w -X github.com/prometheus/common/version.Version=${prometheus_operator_version#v}"
  # Named for what it is in a directory of many binaries (upstream's image calls it `operator`).
  (cd "$operator_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
    -o "$bin/prometheus-operator" "$operator_pkg/cmd/operator")
  (cd "$operator_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
    -o "$bin/prometheus-config-reloader" "$operator_pkg/cmd/prometheus-config-reloader")
  # The CRDs the release ships for `kubectl apply` (the -full ones add a conversion webhook).
  operator_src=$(cd "$operator_dir" && go list -m -json "$operator_pkg" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$bin/prometheus-operator-crds"
  mkdir -p "$bin/prometheus-operator-crds"
  install -m 0644 "$operator_src"/example/prometheus-operator-crd/*.yaml "$bin/prometheus-operator-crds/"
  echo "$operator_key" > "$bin/prometheus-operator.version"
fi
# ECK's operator (elastic-operator, `cmd manager`) and its CRDs, from the checked-in module
# scripts/k8s/eck-operator (a `tool` line names it, so go.sum pins every dependency), keyed by
# version and go.sum: a second real owner for tests of owned StatefulSets (#58).
eck_dir="$here/eck-operator"
eck_key="${eck_version}-$(sha256sum "$eck_dir/go.sum" | cut -c1-12)"
if [ "$(cat "$bin/eck-operator.version" 2>/dev/null)" != "$eck_key" ]; then
  if ! grep -qE "^\s*github\.com/elastic/cloud-on-k8s/v3 ${eck_version}( |$)" "$eck_dir/go.mod"; then
    echo "scripts/k8s/eck-operator is not at ${eck_version}" >&2
    exit 1
  fi
  echo "building ECK's operator ${eck_version}" >&2
  eck_pkg=github.com/elastic/cloud-on-k8s/v3
  (cd "$eck_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/eck-operator" "$eck_pkg/cmd")
  eck_src=$(cd "$eck_dir" && go list -m -json "$eck_pkg" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  install -m 0644 "$eck_src/config/crds/v1/all-crds.yaml" "$bin/eck-operator-crds.yaml"
  echo "$eck_key" > "$bin/eck-operator.version"
fi
echo "$bin"
