#!/usr/bin/env bash
# Builds NVIDIA Skyhook's operator (the manager binary) at a pinned version into
# $KEELSON_CACHE/skyhook-<version> (default ~/.cache/keelson), only when missing, for the side-by-side bench
# (bench/skyhook.ts). Its source and CRDs stay in that cache directory: none of it is part of this repository.
#
# Source: the Go module proxy first (github.com/NVIDIA/skyhook/operator); the public proxy answers 403 for this
# module, so the fallback is a git snapshot of github.com/NVIDIA/skyhook ($SKYHOOK_REPO, a bare or normal git
# directory that has the operator/<version> tag, e.g. one brought by `git clone --mirror`). The build's own
# dependencies come from the proxy.
# Usage: install-skyhook.sh [--print-dir]   (--print-dir prints the cache directory and builds nothing)
set -euo pipefail
version="${SKYHOOK_OPERATOR_VERSION:-v0.13.0}"
module=github.com/NVIDIA/skyhook/operator
cache="${KEELSON_CACHE:-$HOME/.cache/keelson}"
dir="$cache/skyhook-$version"
repo="${SKYHOOK_REPO:-/work/.mirror/NVIDIA+skyhook/repo}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi
step() { printf '[install-skyhook] %s\n' "$*"; }

if [ -x "$dir/bin/manager" ] && [ -d "$dir/src/config/crd/bases" ]; then
  step "skyhook operator $version: cached in $dir"
  exit 0
fi

rm -rf "$dir/src"
mkdir -p "$dir/src" "$dir/bin"
if modjson="$(go mod download -json "$module@$version" 2>/dev/null)"; then
  step "skyhook operator $version: source from the Go module proxy"
  srcdir="$(printf '%s' "$modjson" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  cp -r "$srcdir/." "$dir/src/"
  chmod -R u+w "$dir/src"
elif git --git-dir="$repo" rev-parse -q --verify "operator/$version^{commit}" >/dev/null 2>&1 ||
  git -C "$repo" rev-parse -q --verify "operator/$version^{commit}" >/dev/null 2>&1; then
  step "skyhook operator $version: not on the Go module proxy; source from the git snapshot $repo"
  gitdir="$repo"
  [ -d "$repo/.git" ] && gitdir="$repo/.git"
  git --git-dir="$gitdir" archive "operator/$version" operator | tar -x -C "$dir/src" --strip-components=1
else
  echo "install-skyhook: $module@$version is not on the Go module proxy and SKYHOOK_REPO=$repo has no tag" \
    "operator/$version; clone github.com/NVIDIA/skyhook there (git clone --mirror) or set SKYHOOK_REPO" >&2
  exit 1
fi

step "skyhook operator $version: building cmd/manager (several minutes cold)"
sha="$(git --git-dir="$repo" rev-parse "operator/$version^{commit}" 2>/dev/null || echo unknown)"
(cd "$dir/src" && nice go build -p 1 -trimpath \
  -ldflags "-s -w -X $module/internal/version.VERSION=$version -X $module/internal/version.GIT_SHA=$sha" \
  -o "$dir/bin/manager" ./cmd/manager)
step "skyhook operator $version: built $dir/bin/manager"
