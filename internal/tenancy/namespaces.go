package tenancy

import (
	"fmt"
	"strings"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// NotFederatable says why a hub namespace may not be federated, or "" when
// it may. A federated namespace is inert (no Pods, PVCs, LoadBalancer or
// NodePort Services) and its objects are templates a policy there may
// propagate; neither may happen to:
//
//   - kube-system, kube-public, kube-node-lease and every other kube-*
//     namespace (Kubernetes reserves the prefix): they hold the management
//     cluster's own components, which an inert quota would stop;
//   - flotilla-system: Flotilla itself runs there and keeps members'
//     credentials there;
//   - flotilla-es-<member>: a member's execution namespace holds its Works.
//
// default may be federated, as Karmada propagates templates from it
// (Karmada manifests often live there); see DefaultFederatedWarning.
func NotFederatable(namespace string) string {
	switch {
	case strings.HasPrefix(namespace, "kube-"):
		return fmt.Sprintf("namespace %s cannot be federated (%s=true): it holds the management cluster's own components (kube-* namespaces are reserved by Kubernetes), which a federated namespace's inert quota would stop; label a namespace of your own", namespace, policyv1alpha1.FederatedLabel)
	case namespace == clusterv1alpha1.SystemNamespace:
		return fmt.Sprintf("namespace %s cannot be federated (%s=true): Flotilla itself runs there and keeps members' credentials there; label a namespace of your own", namespace, policyv1alpha1.FederatedLabel)
	case strings.HasPrefix(namespace, clusterv1alpha1.ExecutionNamespacePrefix):
		return fmt.Sprintf("namespace %s cannot be federated (%s=true): %s* namespaces hold members' Works, written by Flotilla only; label a namespace of your own", namespace, policyv1alpha1.FederatedLabel, clusterv1alpha1.ExecutionNamespacePrefix)
	}
	return ""
}

// DefaultFederatedWarning is the admission warning given when default is
// federated: allowed, with its consequences on a management cluster.
const DefaultFederatedWarning = "namespace default is federated: from now on it admits no Pods, PersistentVolumeClaims, LoadBalancer or NodePort Services, and a PropagationPolicy there can select any of its objects — if CAPI Clusters live in default, their kubeconfig Secrets too; prefer a namespace of your own"
