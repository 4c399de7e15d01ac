#!/usr/bin/env bash
# Builds NVIDIA Skyhook's operator (the manager binary) at a pinned version into
# $KEELSON_CACHE/skyhook-<version> (default ~/.cache/keelson), only when missing, for the side-by-side bench
# (bench/skyhook.ts). Its source and CRDs stay in that cache directory: none of it is part of this repository.
#
# Source: the Go module proxy first (github.com/NVIDIA/skyhook/operator); the public proxy answers 403 for this
# module, so the fallback is a git repository of github.com/NVIDIA/skyhook that has the operator/<version> tag:
# $SKYHOOK_REPO (a bare or normal clone, or a mirror) when set; otherwise a mirror the script clones itself into
# $KEELSON_CACHE/skyhook-src (git clone --mirror https://github.com/NVIDIA/skyhook) and reuses afterwards. The
# build's own dependencies come from the proxy.
# Usage: install-skyhook.sh [--print-dir]   (--print-dir prints the cache directory and builds nothing)
set -euo pipefail
version="${SKYHOOK_OPERATOR_VERSION:-v0.13.0}"
module=github.com/NVIDIA/skyhook/operator
cache="${KEELSON_CACHE:-$HOME/.cache/keelson}"
dir="$cache/skyhook-$version"
upstream=https://github.com/NVIDIA/skyhook
tag="operator/$version"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi
step() { printf '[install-skyhook] %s\n' "$*"; }
fail() {
  printf 'install-skyhook: %s\n' "$*" >&2
  exit 1
}

# The git directory of a repository path: its .git for a normal clone, the path itself for a bare one or a mirror.
git_dir_of() { if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi; }
has_tag() { git --git-dir="$1" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; }

# Prints the git directory to take the operator's source from, or fails saying what was tried and what to do.
skyhook_source() {
  local gitdir src
  if [ -n "${SKYHOOK_REPO:-}" ]; then
    gitdir="$(git_dir_of "$SKYHOOK_REPO")"
    has_tag "$gitdir" && { echo "$gitdir"; return; }
    fail "$module@$version is not on the Go module proxy, and SKYHOOK_REPO=$SKYHOOK_REPO is not a git repository" \
      "with the tag $tag. Point SKYHOOK_REPO at a clone or mirror of $upstream that has it" \
      "(git clone --mirror $upstream <dir>; or git fetch --tags in an existing clone), or unset it to let this" \
      "script clone one into $cache/skyhook-src."
  fi
  src="$cache/skyhook-src"
  if [ ! -d "$src" ]; then
    step "skyhook operator $version: SKYHOOK_REPO not set; cloning $upstream into $src (git clone --mirror)" >&2
    rm -rf "$src.partial"
    if ! git clone --quiet --mirror "$upstream" "$src.partial" >&2; then
      rm -rf "$src.partial"
      fail "$module@$version is not on the Go module proxy, SKYHOOK_REPO is not set, and" \
        "git clone --mirror $upstream $src failed (see git's message above)." \
        "On a machine that reaches github.com run: git clone --mirror $upstream skyhook.git, bring that directory" \
        "here and set SKYHOOK_REPO=<its path> (or put it at $src)."
    fi
    mv "$src.partial" "$src"
  elif ! has_tag "$src"; then
    step "skyhook operator $version: $src has no tag $tag; fetching it" >&2
    git --git-dir="$src" fetch --quiet --prune origin >&2 || true
  fi
  has_tag "$src" && { echo "$src"; return; }
  fail "$module@$version is not on the Go module proxy, SKYHOOK_REPO is not set, and the mirror $src has no tag" \
    "$tag (a fetch from $upstream did not bring it). Set SKYHOOK_REPO to a clone or mirror of $upstream that has it."
}

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
else
  gitdir="$(skyhook_source)"
  step "skyhook operator $version: not on the Go module proxy; source from the git repository $gitdir"
  git --git-dir="$gitdir" archive "$tag" operator | tar -x -C "$dir/src" --strip-components=1
fi

step "skyhook operator $version: building cmd/manager (several minutes cold)"
sha="$(git --git-dir="${gitdir:-/nonexistent}" rev-parse "$tag^{commit}" 2>/dev/null || echo unknown)"
(cd "$dir/src" && nice go build -p 1 -trimpath \
  -ldflags "-s -w -X $module/internal/version.VERSION=$version -X $module/internal/version.GIT_SHA=$sha" \
  -o "$dir/bin/manager" ./cmd/manager)
step "skyhook operator $version: built $dir/bin/manager"
