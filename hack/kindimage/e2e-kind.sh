#!/usr/bin/env bash
# Runs the kind-labelled Ginkgo specs (E2E_BACKEND=kind) for `make test-e2e-kind`.
#
#   KIND_OFFLINE=1   build everything kind and CAPD run here (hack/kindimage
#                    -providers: node image, Cluster API providers, CAPD, its
#                    haproxy, a cert-manager stand-in) instead of pulling it
#   OUT              where `make images release-manifests` wrote (default out)
#
# When the engine cannot run a privileged container (docs/kind-offline-findings.md,
# H1) it starts hack/dockerproxy and points kind and CAPD at it. Whatever it
# started or created (the proxy, the kind network, dangling volumes made by the
# run) is removed on exit; kindfleet removes the clusters.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
work=$(mktemp -d /tmp/flotilla-e2e-kind.XXXXXX)
proxy_pid=""
orig_docker_host=${DOCKER_HOST:-}
had_kind_network=$(docker network ls --filter name='^kind$' --format '{{.Name}}' 2>/dev/null)
volumes_before=$(docker volume ls -q 2>/dev/null | sort)

cleanup() {
	if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null; fi
	if [ -n "$orig_docker_host" ]; then export DOCKER_HOST=$orig_docker_host; else unset DOCKER_HOST; fi
	if [ -z "${E2E_KIND_KEEP:-}" ]; then
		if [ -z "$had_kind_network" ] && docker network inspect kind >/dev/null 2>&1; then
			docker network rm kind >/dev/null 2>&1 && echo "e2e-kind: removed the kind network"
		fi
		new=$(comm -13 <(echo "$volumes_before") <(docker volume ls -q --filter dangling=true 2>/dev/null | sort))
		if [ -n "$new" ]; then
			echo "e2e-kind: removing $(echo "$new" | wc -l) dangling volume(s) the run left"
			echo "$new" | xargs -r docker volume rm >/dev/null
		fi
	fi
	rm -rf "$work"
}
trap cleanup EXIT

node_image=""
if [ -n "${KIND_OFFLINE:-}" ]; then
	start=$(date +%s)
	node_image=$(go run ./hack/kindimage -providers "$OUT/kind") || exit 1
	echo "e2e-kind: offline images ready in $(($(date +%s) - start)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	export E2E_KIND_OFFLINE="$(realpath "$OUT/kind/offline.json")"
fi

# kind and CAPD create privileged containers; some engines cannot run them.
probe=${node_image:-}
if [ -n "$probe" ] && ! docker run --rm --privileged --entrypoint /bin/true "$probe" >/dev/null 2>"$work/privileged.err"; then
	echo "e2e-kind: the engine cannot run privileged containers ($(grep -m1 -i error "$work/privileged.err")): starting hack/dockerproxy"
	go build -o "$work/dockerproxy" ./hack/dockerproxy || exit 1
	"$work/dockerproxy" --listen "$work/docker.sock" >"$work/dockerproxy.log" 2>&1 &
	proxy_pid=$!
	for _ in $(seq 50); do [ -S "$work/docker.sock" ] && break; sleep 0.1; done
	export DOCKER_HOST="unix://$work/docker.sock"
fi

# A management cluster and three CAPD clusters need more inotify instances than 128.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances)" -lt 512 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "e2e-kind: raising fs.inotify.max_user_instances to 512 (was $(cat /proc/sys/fs/inotify/max_user_instances))"
		sysctl -qw fs.inotify.max_user_instances=512
	else
		echo "e2e-kind: fs.inotify.max_user_instances is $(cat /proc/sys/fs/inotify/max_user_instances); kind's advice is 512 (sysctl fs.inotify.max_user_instances=512)"
	fi
fi

E2E_BACKEND=kind go test ${GO_TEST_FLAGS:-} -timeout "${E2E_KIND_TIMEOUT:-60m}" -v ./e2e/ -ginkgo.v -ginkgo.no-color -ginkgo.label-filter=kind
rc=$?
if [ -n "$proxy_pid" ]; then cp "$work/dockerproxy.log" "$OUT/kind/dockerproxy.log" 2>/dev/null; fi
exit $rc
