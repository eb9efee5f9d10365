#!/bin/bash
# kind-routes: a node-local stand-in for kindnetd that needs no container image.
# Once the kubelet is registered, write this node's bridge CNI config from its
# spec.podCIDR and keep a route to every other node's pod CIDR via its InternalIP.
set -uo pipefail
KC=${KUBECONFIG_FILE:-}
ME=${NODE_NAME:-$(hostname)}
CONF=${CNI_CONF_DIR:-/etc/cni/net.d}/10-kind-bridge.conflist
MTU=$(cat /sys/class/net/eth0/mtu 2>/dev/null || echo 1500)
last=""
[[ -n "$KC" ]] && until [[ -s $KC ]]; do sleep 1; done; K=(kubectl); [[ -n "$KC" ]] && K+=(--kubeconfig "$KC")
while true; do
  nodes=$("${K[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null | sort)
  if [[ -n "$nodes" && "$nodes" != "$last" ]]; then
    mine=""; all=()
    while read -r name cidr ip; do
      [[ -z "$cidr" ]] && continue
      all+=("$cidr")
      if [[ "$name" == "$ME" ]]; then mine=$cidr; else ip route replace "$cidr" via "$ip"; fi
    done <<< "$nodes"
    if [[ -n "$mine" ]]; then
      cat > "$CONF.tmp" <<JSON
{"cniVersion": "1.0.0", "name": "kind-bridge", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true, "mtu": $MTU,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$mine"}]]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
      cmp -s "$CONF.tmp" "$CONF" && rm -f "$CONF.tmp" || mv "$CONF.tmp" "$CONF"
      iptables -t nat -N KIND-MASQ 2>/dev/null; iptables -t nat -F KIND-MASQ
      for c in "${all[@]}"; do iptables -t nat -A KIND-MASQ -d "$c" -j RETURN; done
      iptables -t nat -A KIND-MASQ -j MASQUERADE
      iptables -t nat -C POSTROUTING -s "$mine" -j KIND-MASQ 2>/dev/null || iptables -t nat -A POSTROUTING -s "$mine" -j KIND-MASQ
      last=$nodes
      echo "kind-routes: pod CIDR $mine, nodes: $(echo "$nodes" | tr '\n' ';')"
    fi
  fi
  sleep 3
done
