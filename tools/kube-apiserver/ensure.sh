#!/usr/bin/env bash
# Builds kube-apiserver from source (k8s.io/kubernetes through the Go module
# proxy, pinned by this directory's go.mod) into the user's cache directory,
# only when it is not there yet, and prints the binary's path on stdout.
#
# Why from source: Kubernetes ships no Go-installable binary and the machines
# this project runs on reach only the Go module proxy and Debian's packages.
# A cold build takes about six minutes on two cores; later calls return at once.
#
# Usage: tools/kube-apiserver/ensure.sh            # builds if missing, prints the path
#        tools/kube-apiserver/ensure.sh --path     # only prints where it is (or would be)
#        KUBE_APISERVER_REBUILD=1 ensure.sh        # forces a rebuild
set -euo pipefail

# All in a function, so bash has read the whole script before the long build:
# editing or updating this file mid-build cannot derail it.
main() {
  here="$(cd "$(dirname "$0")" && pwd)"
  cd "$here"

  # The version comes from go.mod, in either form: `require X v` or a block line `X v`.
  version="$(awk '{ if ($1 == "require") { $1 = "" ; $0 = $0 } } $1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)"
  if [ -z "$version" ]; then
    echo "ensure.sh: no k8s.io/kubernetes requirement in $here/go.mod" >&2
    exit 1
  fi
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/wayfinder"
  bin="$cache/kube-apiserver-$version"

  if [ "${1:-}" = "--path" ] || { [ -x "$bin" ] && [ -z "${KUBE_APISERVER_REBUILD:-}" ]; }; then
    echo "$bin"
    exit 0
  fi

  mkdir -p "$cache"
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  echo "ensure.sh: building kube-apiserver $version into $bin (about 6 minutes cold on 2 cores)" >&2
  start=$(date +%s)
  # Build to a temporary name and rename, so a concurrent or interrupted build
  # never leaves a half-written binary at the final path.
  tmp="$(mktemp "$cache/.kube-apiserver-$version.XXXXXX")"
  trap 'rm -f "$tmp"' EXIT
  GOWORK=off CGO_ENABLED=0 "${GO:-go}" build -trimpath -ldflags "$ldflags" -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver
  chmod 0755 "$tmp"
  mv -f "$tmp" "$bin"
  trap - EXIT
  echo "ensure.sh: built in $(( $(date +%s) - start ))s" >&2
  echo "$bin"
}

main "$@"
