#!/usr/bin/env bash
# Builds the real Kubernetes parts that Flotilla's tests and local fleet run:
# kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes),
# etcd and kwok, from the pinned tools modules under hack/tools, into bin/.
# Go's build cache makes a second run a relink of seconds; a stamp holding the
# tools modules' go.sum hashes makes a run with nothing changed a no-op.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
KUBE_VERSION=v1.36.3
mkdir -p "$BIN"

START=$(date +%s)
# elapsed <start epoch>: "4m07s" since then.
elapsed() { local d=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((d / 60)) $((d % 60)); }

stamp_of() { cat "$ROOT/hack/tools/$1/go.mod" "$ROOT/hack/tools/$1/go.sum" | sha256sum | cut -c1-16; }

# build <tools module> <output names...> -- <packages...>
build() {
  local mod=$1; shift
  local outs=() pkgs=() seen_sep=0
  for a in "$@"; do
    if [[ $a == -- ]]; then seen_sep=1; continue; fi
    if (( seen_sep )); then pkgs+=("$a"); else outs+=("$a"); fi
  done
  local want; want="$(stamp_of "$mod")-$KUBE_VERSION"
  local stamp="$BIN/.stamp-$mod"
  local missing=0
  for o in "${outs[@]}"; do [[ -x $BIN/$o ]] || missing=1; done
  if (( ! missing )) && [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    echo "test-bins: ${outs[*]} up to date"
    return
  fi
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
  local i t0 ticker
  if [[ $mod == kube ]]; then
    echo "test-bins: a cold build of the Kubernetes binaries takes about 7-10 min on 2 idle cores, kube-apiserver the longest;"
    echo "test-bins: with other work sharing the cores, 20 min or more (over 45 min with four builds on 2 cores). Later runs take seconds."
  fi
  for i in "${!pkgs[@]}"; do
    t0=$(date +%s)
    echo "test-bins: building ${outs[$i]} ($((i + 1))/${#pkgs[@]} of $mod)"
    # A line a minute, so that a long build is seen to be alive.
    ( while sleep 60; do echo "test-bins:   still building ${outs[$i]}, $(elapsed "$t0") so far"; done ) &
    ticker=$!
    if ! (cd "$ROOT/hack/tools/$mod" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" -o "$BIN/${outs[$i]}" "${pkgs[$i]}"); then
      kill "$ticker" 2>/dev/null || true
      echo "test-bins: building ${outs[$i]} failed after $(elapsed "$t0")" >&2
      exit 1
    fi
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    echo "test-bins: built ${outs[$i]} in $(elapsed "$t0") (total $(elapsed "$START"))"
  done
  echo "$want" > "$stamp"
}

build kube kube-apiserver kube-controller-manager kube-scheduler kubectl -- \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
build etcd etcd -- ./cmd/etcd
build kwok kwok -- sigs.k8s.io/kwok/cmd/kwok
build gen controller-gen -- sigs.k8s.io/controller-tools/cmd/controller-gen
build capi capi-manager -- sigs.k8s.io/cluster-api/core

# Cluster API's CRDs, shipped in its module, for the local fleet's hub.
crds=$BIN/capi-crds
if [[ ! -d $crds || $BIN/.stamp-capi -nt $crds ]]; then
  capidir=$(cd "$ROOT/hack/tools/capi" && go list -mod=mod -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
  rm -rf "$crds" && mkdir -p "$crds"
  cp "$capidir"/core/config/crd/bases/*.yaml "$crds"/ && chmod u+w "$crds"/*.yaml
  touch "$crds"
  echo "test-bins: copied Cluster API CRDs"
fi

# kwok refuses to start without stages: the fast node and pod stages shipped in
# the kwok module, gathered into one config file.
stages=$BIN/kwok-stages.yaml
if [[ ! -s $stages || $BIN/.stamp-kwok -nt $stages || $ROOT/hack/build-test-bins.sh -nt $stages ]]; then
  kwokdir=$(cd "$ROOT/hack/tools/kwok" && go list -mod=mod -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  : > "$stages.tmp"
  for f in "$kwokdir"/kustomize/stage/node/fast/node-initialize.yaml "$kwokdir"/kustomize/stage/pod/fast/pod-*.yaml; do
    echo "---" >> "$stages.tmp"; cat "$f" >> "$stages.tmp"
  done
  # What a kubelet does and kwok's stages do not: a running Pod that the
  # node lifecycle controller marked not Ready while its node was unknown
  # (the member's apiserver was down) is Ready again once the node is back.
  cat >> "$stages.tmp" <<'STAGE'
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: flotilla-pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
STAGE
  mv "$stages.tmp" "$stages"
  echo "test-bins: wrote kwok-stages.yaml"
fi
echo "test-bins: bin/ is ready ($(elapsed "$START") in all)"
