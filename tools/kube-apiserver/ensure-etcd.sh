#!/usr/bin/env bash
# Makes sure an etcd binary is there for the Kubernetes tests and prints its
# path. etcd comes from Debian's etcd-server package: installed here when it is
# missing and we are root; otherwise this says what to run. Outside CI a
# missing etcd is only a warning (the Kubernetes tests then skip themselves);
# with CI=true it is an error.
set -euo pipefail

find_etcd() {
  if [ -n "${ETCD:-}" ] && [ -x "$ETCD" ]; then echo "$ETCD"; return 0; fi
  if command -v etcd >/dev/null 2>&1; then command -v etcd; return 0; fi
  if [ -x /usr/bin/etcd ]; then echo /usr/bin/etcd; return 0; fi
  return 1
}

if path="$(find_etcd)"; then
  echo "$path"
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-etcd.sh: installing Debian's etcd-server" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq etcd-server >&2
  if path="$(find_etcd)"; then
    echo "$path"
    exit 0
  fi
fi

msg="etcd is missing: install it with 'sudo apt-get install etcd-server' (or set ETCD=/path/to/etcd)"
if [ "${CI:-}" = true ]; then
  echo "ensure-etcd.sh: $msg" >&2
  exit 1
fi
echo "ensure-etcd.sh: warning: $msg; the Kubernetes tests will be skipped" >&2
