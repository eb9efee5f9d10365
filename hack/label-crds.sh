#!/usr/bin/env bash
# Adds to every generated CRD the labels clusterctl uses to discover and
# `clusterctl move` a provider's types: the contract label naming the API
# version that satisfies CAPI's v1beta2 contract, and the provider label.
set -euo pipefail
dir=$1
for f in "$dir"/*.yaml; do
  # controller-gen writes "metadata:\n  annotations:\n ...\n  name: ..." ; insert labels after "metadata:".
  if ! grep -q 'cluster.x-k8s.io/v1beta2:' "$f"; then
    awk 'done==0 && /^metadata:$/ { print; print "  labels:"; print "    cluster.x-k8s.io/provider: addon-flotilla"; print "    cluster.x-k8s.io/v1beta2: v1alpha1"; done=1; next } { print }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
  fi
done
