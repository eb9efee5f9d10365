//go:build tools

// Package capd pins the Cluster API providers `make test-e2e-kind` builds
// for a registry-less kind management cluster (hack/kindimage -providers):
// the core manager, the kubeadm bootstrap and control-plane managers, and the
// Docker infrastructure provider (CAPD), which lives in the separate module
// sigs.k8s.io/cluster-api/test and must be at exactly the version of
// sigs.k8s.io/cluster-api and sigs.k8s.io/cluster-api/api.
package capd

import (
	_ "sigs.k8s.io/cluster-api/bootstrap/kubeadm"
	_ "sigs.k8s.io/cluster-api/controlplane/kubeadm"
	_ "sigs.k8s.io/cluster-api/core"
	_ "sigs.k8s.io/cluster-api/test/infrastructure/docker"
)
