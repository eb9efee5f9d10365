#!/usr/bin/env bash
# Adds to every generated CRD the labels clusterctl relies on:
# - cluster.x-k8s.io/provider: addon-flotilla — the provider's objects
#   (clusterctl upgrade and delete find the CRDs by it);
# - cluster.x-k8s.io/v1beta2: v1alpha1 — the contract label naming the API
#   version that satisfies Cluster API's v1beta2 contract;
# - clusterctl.cluster.x-k8s.io/move on the policy.flotilla.io and config.flotilla.io kinds only —
#   `clusterctl move` copies every object of a kind so labelled: policies and
#   quotas and interpreter customizations are the user's intent. Members, bindings and Works are not moved:
#   the target hub's flotilla-manager derives them again.
# Idempotent: a label already present is not added twice.
set -euo pipefail
dir=$1
for f in "$dir"/*.yaml; do
  labels=("cluster.x-k8s.io/provider: addon-flotilla" "cluster.x-k8s.io/v1beta2: v1alpha1")
  case $(basename "$f") in
    policy.flotilla.io_*|config.flotilla.io_*) labels+=('clusterctl.cluster.x-k8s.io/move: ""') ;;
  esac
  for label in "${labels[@]}"; do
    key=${label%%:*}
    grep -q "^    $key:" "$f" && continue
    # controller-gen writes "metadata:\n  annotations: ...\n  name: ..."; the
    # labels block goes right after "metadata:", a new label at its end, so
    # that the order is the same however many runs added them.
    awk -v label="$label" '
      state == 0 && /^metadata:$/ { print; state = 1; next }
      state == 1 && $0 == "  labels:" { print; state = 2; next }
      state == 1 { print "  labels:"; print "    " label; print; state = 3; next }
      state == 2 && /^    / { print; next }
      state == 2 { print "    " label; print; state = 3; next }
      { print }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
  done
done
