#!/usr/bin/env bash
# Prints the CustomResourceDefinitions of the given Istio resources
# (plural names, of networking.istio.io, telemetry.istio.io or
# security.istio.io) from Istio's generated CRD file, with a header naming
# where they came from. `make crds` runs it to refresh
# manifests/crds/istio-networking.yaml and istio-security.yaml.
# Usage: refresh-crds.sh SOURCE.yaml ORIGIN PLURAL...
set -euo pipefail
src="$1"; origin="$2"; shift 2
want="$(IFS='|'; echo "$*")"
echo "# Istio's CRDs for the Istio kinds Wayfinder reads ($*),"
echo "# copied from $origin kubernetes/customresourcedefinitions.gen.yaml."
echo "# Do not edit: run 'make crds' to refresh."
awk -v keep="^  name: (${want})\\\\.(networking|telemetry|security)\\\\.istio\\\\.io\$" '
  function flush() {
    if (doc != "" && hit) { printf "%s%s", (n++ ? "---\n" : ""), doc }
    doc = ""; hit = 0
  }
  /^---$/ { flush(); next }
  doc == "" && /^#/ { next }
  { doc = doc $0 "\n"; if ($0 ~ keep) hit = 1 }
  END { flush() }
' "$src"
