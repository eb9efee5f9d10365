package v1alpha1

// Labels and annotations on hub namespaces and resource templates that the
// propagation pipeline reads or writes (see docs/propagation.md).
const (
	// FederatedLabel makes a hub namespace federated when "true": its
	// templates may propagate, and flotilla-manager keeps it inert (a
	// ResourceQuota that admits no Pods, PVCs, LoadBalancer or NodePort
	// Services), so that nothing of a template runs on the hub.
	FederatedLabel = "flotilla.io/federated"

	// EnvelopeLabel marks a ConfigMap as an envelope when "true": its data
	// values are YAML manifests (one or more documents each) that travel to
	// members in place of the ConfigMap, so that objects which would act on
	// the hub (admission webhooks, APIServices) are never created there.
	EnvelopeLabel = "flotilla.io/envelope"

	// AllowOverwriteLabel on a hub namespace, "true", is a cluster admin's
	// mark that PropagationPolicies there may take over objects Flotilla did
	// not create in members (conflictResolution: Overwrite). Without it a
	// PropagationPolicy's Overwrite acts as Abort and the conflict is
	// reported; ClusterPropagationPolicies need no mark. Namespaces are
	// cluster-scoped: a tenant's admin or edit role cannot set it.
	AllowOverwriteLabel = "policy.flotilla.io/allow-overwrite"

	// AllowExternalIPsLabel on a hub namespace, "true", is a cluster admin's
	// mark that Services with spec.externalIPs may be rendered from it into
	// members. Without it such a Service is left out of every Work, from a
	// template, an envelope or an override alike: externalIPs make every
	// node of the member answer for addresses that may be someone else's
	// (CVE-2020-8554).
	AllowExternalIPsLabel = "policy.flotilla.io/allow-external-ips"

	// PropagationPolicyPermanentIDLabel on a template (and its binding)
	// carries the UID of the PropagationPolicy that claims it.
	PropagationPolicyPermanentIDLabel = "propagationpolicy.flotilla.io/permanent-id"
	// PropagationPolicyNamespaceAnnotation and PropagationPolicyNameAnnotation
	// name the PropagationPolicy that claims a template.
	PropagationPolicyNamespaceAnnotation = "propagationpolicy.flotilla.io/namespace"
	PropagationPolicyNameAnnotation      = "propagationpolicy.flotilla.io/name"

	// ClusterPropagationPolicyPermanentIDLabel on a template (and its
	// binding) carries the UID of the ClusterPropagationPolicy that claims it.
	ClusterPropagationPolicyPermanentIDLabel = "clusterpropagationpolicy.flotilla.io/permanent-id"
	// ClusterPropagationPolicyNameAnnotation names the ClusterPropagationPolicy
	// that claims a template.
	ClusterPropagationPolicyNameAnnotation = "clusterpropagationpolicy.flotilla.io/name"
)
