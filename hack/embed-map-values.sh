#!/usr/bin/env bash
# Marks the values of a map property of a generated CRD as embedded
# resources (x-kubernetes-embedded-resource: true), which controller-gen
# cannot do: its +kubebuilder:validation:EmbeddedResource marker describes
# fields only, and a map value is not a field. With the mark the API server
# requires apiVersion and kind in every value, validates its metadata as an
# object's, and lets CEL rules read metadata.name.
#
#   hack/embed-map-values.sh <crd.yaml> <property>
#
# The property's additionalProperties must be a preserve-unknown-fields
# object (a Go map of a type inlining runtime.RawExtension). Idempotent.
set -euo pipefail
f=$1 prop=$2
awk -v prop="$prop" '
  # "<indent><prop>:" then "<indent>  additionalProperties:": the value
  # schema is indented by <indent>+4.
  match($0, "^ *" prop ":$") { want = RLENGTH - length(prop) - 1; print; next }
  want >= 0 && $0 ~ "^ *additionalProperties:$" && match($0, "^ *") && RLENGTH == want + 2 {
    inner = sprintf("%" (want + 4) "s", ""); want = -1; print; next }
  inner != "" && $0 == inner "x-kubernetes-embedded-resource: true" { next }
  inner != "" && $0 == inner "x-kubernetes-preserve-unknown-fields: true" {
    print inner "x-kubernetes-embedded-resource: true"; print; inner = ""; done = 1; next }
  inner != "" && match($0, "^ *") && RLENGTH < length(inner) { inner = "" }
  { if (want >= 0 && $0 !~ "^ *additionalProperties:$" && $0 !~ "^ *description:") want = -1; print }
  END { if (!done) { print "embed-map-values: no preserve-unknown-fields map " prop " found" > "/dev/stderr"; exit 1 } }
  BEGIN { want = -1 }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
