package v1alpha1

import "time"

// Labels and annotations on CAPI Clusters, Namespaces and hub objects that
// enrolment reads or writes (see docs/enrolment.md).
const (
	// EnrolLabel opts a CAPI Cluster, or every Cluster of a Namespace, into
	// the fleet when "true". "false" on a Cluster opts it out whatever its
	// Namespace or the manager's --enrol-all say.
	EnrolLabel = "flotilla.io/enroll"

	// MemberNameAnnotation on a CAPI Cluster records the name of its
	// MemberCluster. Enrolment writes it once and never changes it; a user may
	// set it before enrolment to choose the name.
	MemberNameAnnotation = "flotilla.io/member-name"

	// MemberLabel carries the member's name: on the CAPI Cluster (the
	// add-on ClusterResourceSets select on it) and on the hub objects that
	// belong to a member.
	MemberLabel = "flotilla.io/member"

	// SyncModeAnnotation on a CAPI Cluster sets the member's spec.syncMode
	// (Push or Pull). Without it the MemberCluster's own value is left alone.
	SyncModeAnnotation = "flotilla.io/sync-mode"

	// ProviderLabel on a CAPI Cluster names its infrastructure provider; it is
	// copied to the MemberCluster's spec.provider and labels.
	ProviderLabel = "flotilla.io/provider"

	// MemberLabelPrefix: Cluster labels under this prefix are copied to the
	// MemberCluster, so that cluster affinity by label can use them.
	MemberLabelPrefix = "member.flotilla.io/"

	// ClusterFinalizer holds an enrolled CAPI Cluster until its member has
	// drained and its hub objects are gone.
	ClusterFinalizer = "cluster.flotilla.io/enrolment"
)

// Namespaces and names shared by the hub, the estimator and the agent.
const (
	// SystemNamespace holds Flotilla's own objects, on the hub and in members.
	SystemNamespace = "flotilla-system"

	// ExecutionNamespacePrefix prefixes the hub namespace of a member's Works.
	ExecutionNamespacePrefix = "flotilla-es-"

	// CapacityModelConfigMap is the ConfigMap in the member's SystemNamespace
	// where flotilla-estimator publishes the member's capacity.
	CapacityModelConfigMap = "flotilla-capacity-model"
	// CapacityModelKey holds the CapacityModel as JSON.
	CapacityModelKey = "capacityModel"
	// NodeSummaryKey holds the NodeSummary as JSON.
	NodeSummaryKey = "nodeSummary"
	// ResourceSummaryKey holds the ResourceSummary as JSON.
	ResourceSummaryKey = "resourceSummary"

	// MaxBoundPodNamespaces bounds CapacityModel.BoundPods.
	MaxBoundPodNamespaces = 1000
)

// ExecutionNamespace is the hub namespace holding member's Works.
func ExecutionNamespace(member string) string { return ExecutionNamespacePrefix + member }

// The Lease a Pull-mode member's flotilla-agent renews on the hub, Lease
// AgentLeaseName ("flotilla-agent", see failover.go) in the namespace
// AgentLeaseNamespace(member). The agent writes spec.leaseDurationSeconds =
// AgentLeaseDurationSeconds and renews spec.renewTime every
// AgentLeaseRenewInterval; the hub treats the member as unreachable once
// renewTime + leaseDurationSeconds has passed (docs/agent.md).
const (
	// AgentLeaseDurationSeconds is how long a renewal vouches for the agent.
	AgentLeaseDurationSeconds = 40
	// AgentLeaseRenewInterval is how often the agent renews: a quarter of the
	// duration, so that three renewals in a row may fail (a hub apiserver
	// restart, a network blip) before the Lease expires.
	AgentLeaseRenewInterval = AgentLeaseDurationSeconds * time.Second / 4
)

// AgentLeaseNamespace is the hub namespace of member's agent Lease: its
// execution namespace, the only one the agent may write to.
func AgentLeaseNamespace(member string) string { return ExecutionNamespace(member) }

// HubIdentitySecretName is the Secret in the hub's SystemNamespace holding the
// kubeconfig of the hub's scoped identity in member.
func HubIdentitySecretName(member string) string { return member + "-hub-identity" }

// Reasons of the Enrolled condition.
const (
	// EnrolledReason: identity, execution namespace and add-ons are in place.
	EnrolledReason = "Enrolled"
	// WaitingForControlPlaneReason: the Cluster's control plane is not
	// initialized yet (status.initialization.controlPlaneInitialized).
	WaitingForControlPlaneReason = "WaitingForControlPlane"
	// WaitingForKubeconfigReason: CAPI's <cluster>-kubeconfig Secret is absent.
	WaitingForKubeconfigReason = "WaitingForKubeconfig"
	// WaitingForTokenReason: a ServiceAccount token Secret (the hub identity's
	// in the member, or the agent's on the hub) has not been filled in yet.
	WaitingForTokenReason = "WaitingForToken"
	// WaitingForExecutionNamespaceReason: the execution namespace of an
	// earlier member of the same name is still being deleted.
	WaitingForExecutionNamespaceReason = "WaitingForExecutionNamespace"
	// IdentityFailedReason: the scoped identity could not be set up in, or
	// used against, the member.
	IdentityFailedReason = "IdentityFailed"
	// AddonsFailedReason: the add-on ClusterResourceSets or the agent's hub
	// credentials could not be written.
	AddonsFailedReason = "AddonsFailed"
	// NameConflictReason: the member name chosen by the MemberNameAnnotation
	// belongs to another Cluster's member. Reported as an event on the
	// Cluster, since no MemberCluster exists for it.
	NameConflictReason = "NameConflict"
	// InvalidMemberNameReason: the MemberNameAnnotation is not a valid name.
	InvalidMemberNameReason = "InvalidMemberName"
)

// Reasons of the Reachable, ControlPlaneAvailable and Ready conditions, which
// mirror the CAPI Cluster's v1beta2 conditions (see internal/health).
const (
	ReachableReason               = "Reachable"
	UnreachableReason             = "Unreachable"
	ReachabilityUnknownReason     = "ReachabilityUnknown"
	ControlPlaneAvailableReason   = "ControlPlaneAvailable"
	ControlPlaneUnavailableReason = "ControlPlaneUnavailable"
	ControlPlaneUnknownReason     = "ControlPlaneAvailabilityUnknown"
	// ReadyReason: reachable, control plane available and enrolled.
	ReadyReason = "Ready"
	// NotEnrolledReason: Ready is False until the Enrolled condition is True.
	NotEnrolledReason = "NotEnrolled"
)

// Reasons of the Terminating condition.
const (
	// ClusterDeletingReason: the CAPI Cluster is being deleted; the member
	// drains before its hub objects go.
	ClusterDeletingReason = "ClusterDeleting"
	// UnenrollingReason: the Cluster no longer opts in; the member drains
	// before its hub objects and its identity in the member go.
	UnenrollingReason = "Unenrolling"
)
