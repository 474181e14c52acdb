#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet (from the checked-in Go
# module of one minor, scripts/k8s/v1.MINOR), kwok and helm into a cache outside the repository, keyed
# by version and the go.sum hash. Prints the bin directory. A second run with the same inputs does
# nothing.
#   FERRY_K8S_VERSION=v1.35 scripts/k8s/build.sh     (default: the newest minor in scripts/k8s)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$here/versions.sh"
k8s_resolve "${FERRY_K8S_VERSION:-}"
kwok_version=v0.7.0
helm_version=v3.22.0
key="${k8s_version}-$(sha256sum "$k8s_dir/go.sum" | cut -c1-12)"
cache_root="${FERRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferry}"
bin="$cache_root/testenv/$key/bin"
mkdir -p "$bin"

wanted=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet)
missing=0
for b in "${wanted[@]}"; do [ -x "$bin/$b" ] || missing=1; done
if [ "$missing" = 1 ]; then
  echo "building Kubernetes ${k8s_version} control plane into $bin (cold: 10-25 min on 2 cores)" >&2
  minor=${k8s_version#v1.}; minor=${minor%%.*}
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
  done
  (cd "$k8s_dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet)
fi
if [ ! -x "$bin/kwok" ]; then
  echo "building kwok ${kwok_version}" >&2
  # kwok's own go.mod needs no replaces; install it in module mode outside our module.
  (cd / && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${kwok_version}")
  kwok_dir=$(cd / && go list -m -json "sigs.k8s.io/kwok@${kwok_version}" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')
  mkdir -p "$bin/../kwok-stages"
  cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml \
     "$kwok_dir"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-ready.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-complete.yaml \
     "$kwok_dir"/kustomize/stage/pod/fast/pod-delete.yaml "$bin/../kwok-stages/"
fi
if [ "$("$bin/helm" version --template '{{.Version}}' 2>/dev/null)" != "$helm_version" ]; then
  echo "building helm ${helm_version} (tests install and upgrade charts with it)" >&2
  (cd / && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}" "helm.sh/helm/v3/cmd/helm@${helm_version}")
fi
echo "$bin"
