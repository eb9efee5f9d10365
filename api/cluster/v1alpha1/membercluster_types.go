package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncMode says how Works reach a member.
// +kubebuilder:validation:Enum=Push;Pull
type SyncMode string

const (
	// Push: the hub applies Works to the member with its scoped identity.
	Push SyncMode = "Push"
	// Pull: the member's flotilla-agent pulls its Works from the hub.
	Pull SyncMode = "Pull"
)

// Condition types of a MemberCluster.
const (
	// ConditionReady summarises the member's health: True when the hub (or,
	// in Pull mode, its agent) can reach it and its control plane is available.
	ConditionReady = "Ready"
	// ConditionReachable mirrors CAPI's RemoteConnectionProbe in Push mode
	// and the agent's Lease in Pull mode.
	ConditionReachable = "Reachable"
	// ConditionObjectsLeftBehind is True when Works of the member were
	// deleted while it could not be reached for the execution controller's
	// withdraw timeout: their objects were not removed from the member, and
	// the message names them. Informational; it stays until the member is
	// removed or the condition is deleted by an operator who cleaned them.
	ConditionObjectsLeftBehind = "ObjectsLeftBehind"
	// ObjectsLeftBehindReason is ConditionObjectsLeftBehind's reason when
	// the member did not answer; ObjectsKeptReason when its Cluster opted
	// out of the fleet and keeps what runs in it.
	ObjectsLeftBehindReason = "WithdrawTimedOut"
	ObjectsKeptReason       = "ClusterOptedOut"
	// ConditionRemovalsPaced is True while Works whose objects are to leave
	// the member wait because more than a share of its Works would go at
	// once; the message says the pace and what asked for the removals.
	ConditionRemovalsPaced = "RemovalsPaced"
	// RemovalsNotPacedReason: nothing waits any more.
	RemovalsNotPacedReason = "NotPaced"
	// ConditionControlPlaneAvailable mirrors CAPI's ControlPlaneAvailable.
	ConditionControlPlaneAvailable = "ControlPlaneAvailable"
	// ConditionWorkersAvailable is False when healthy worker Machines fall
	// below the configured share.
	ConditionWorkersAvailable = "WorkersAvailable"
	// ConditionEnrolled is True once the member's identity, execution
	// namespace and add-ons are in place.
	ConditionEnrolled = "Enrolled"
	// ConditionTerminating is True while the member drains before removal.
	ConditionTerminating = "Terminating"
)

// Well-known taint keys, set from health (see docs/concepts.md).
const (
	TaintUnreachable = "cluster.flotilla.io/unreachable"
	TaintNotReady    = "cluster.flotilla.io/not-ready"
	TaintTerminating = "cluster.flotilla.io/terminating"
	TaintDegraded    = "cluster.flotilla.io/workers-degraded"
	TaintCordoned    = "cluster.flotilla.io/cordoned"
)

// ClusterReference names the CAPI Cluster a member comes from.
type ClusterReference struct {
	// Namespace of the CAPI Cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`

	// Name of the CAPI Cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
}

// MemberClusterSpec is the desired state of a member.
type MemberClusterSpec struct {
	// ClusterRef is the CAPI Cluster this member comes from. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable"
	// +required
	ClusterRef ClusterReference `json:"clusterRef"`

	// SyncMode is Push (the hub applies Works) or Pull (the agent does).
	// +kubebuilder:default=Push
	// +optional
	SyncMode SyncMode `json:"syncMode,omitempty"`

	// Provider is the member's infrastructure provider, e.g. aws.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Provider string `json:"provider,omitempty"`

	// Region of the member.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Region string `json:"region,omitempty"`

	// Zone of the member, when it has one.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Zone string `json:"zone,omitempty"`

	// Zones of the member, when it spans several.
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Taints keep bindings that do not tolerate them off the member
	// (NoSchedule) or move them away (NoExecute).
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// Unschedulable cordons the member: nothing new is placed on it.
	// +optional
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// MemberClusterStatus is the observed state of a member.
type MemberClusterStatus struct {
	// ObservedGeneration is the generation last acted upon.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the member.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion of the member's apiserver.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIEnablements are the resources the member serves, by group version.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// NodeSummary counts the member's Nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary sums the member's resources.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`

	// CapacityModel is the estimator's compact model of the member's free
	// capacity, from which the hub computes how many replicas of any
	// requirement fit, node by node.
	// +optional
	CapacityModel *CapacityModel `json:"capacityModel,omitempty"`

	// LastHeartbeatTime is when the member last answered (Push) or its agent
	// last renewed its Lease (Pull).
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`

	// IdentitySecretRef names the hub Secret holding the kubeconfig of the
	// member's scoped identity (ServiceAccount flotilla-hub in the member),
	// which the hub uses for every write into a Push-mode member.
	// +optional
	IdentitySecretRef *corev1.SecretReference `json:"identitySecretRef,omitempty"`
}

// APIEnablement lists the resources one group version serves.
type APIEnablement struct {
	// GroupVersion, e.g. apps/v1.
	// +required
	GroupVersion string `json:"groupVersion"`

	// Resources of the group version.
	// +optional
	// +listType=atomic
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource is one served resource.
type APIResource struct {
	// Name is the plural resource name, e.g. deployments.
	// +required
	Name string `json:"name"`

	// Kind, e.g. Deployment.
	// +required
	Kind string `json:"kind"`
}

// NodeSummary counts Nodes.
type NodeSummary struct {
	// TotalNum is the number of Nodes.
	// +optional
	TotalNum int32 `json:"totalNum,omitempty"`

	// ReadyNum is the number of Ready Nodes.
	// +optional
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary sums resources over the member's Ready, schedulable Nodes.
type ResourceSummary struct {
	// Allocatable is the sum of Node allocatable.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Allocating is requested by Pods not yet bound to a Node.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`

	// Allocated is requested by Pods bound to a Node.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// CapacityModel groups a member's schedulable Nodes into classes of identical
// scheduling-relevant shape and free capacity, so that the model of a
// 5,000-node cluster stays small while fit stays exact per node.
type CapacityModel struct {
	// ObservedTime is when the estimator computed the model.
	// +required
	ObservedTime metav1.Time `json:"observedTime"`

	// ObservedPods is the number of non-terminal Pods the model accounts for.
	// +optional
	ObservedPods int32 `json:"observedPods,omitempty"`

	// BoundPods counts the non-terminal Pods bound to a Node, per namespace.
	// The hub holds the capacity of replicas it has just placed in a
	// namespace until this count shows their Pods, so a replica is charged
	// once: by the hold before its Pod exists, by the model after. Namespaces
	// without bound Pods are left out, and so are the smallest ones past
	// MaxBoundPodNamespaces; a namespace left out only makes the hub hold
	// capacity longer, never less.
	// +optional
	// +kubebuilder:validation:MaxProperties=1000
	BoundPods map[string]int32 `json:"boundPods,omitempty"`

	// NodeGroups are the classes of Nodes.
	// +optional
	// +listType=atomic
	NodeGroups []NodeGroup `json:"nodeGroups,omitempty"`
}

// NodeGroup is Count Nodes that share labels, taints and free capacity.
type NodeGroup struct {
	// Count of Nodes in the group.
	// +kubebuilder:validation:Minimum=1
	// +required
	Count int32 `json:"count"`

	// Labels the Nodes share, less per-node labels such as the hostname.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Taints the Nodes share.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// Free is what each Node of the group has left: allocatable less the
	// requests of its Pods, including the "pods" count.
	// +required
	Free corev1.ResourceList `json:"free"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=memberclusters,scope=Cluster,shortName=mc,categories={flotilla}
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`,description="CAPI Cluster"
// +kubebuilder:printcolumn:name="Cluster-Namespace",type=string,JSONPath=`.spec.clusterRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`,priority=1
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`,priority=1
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeSummary.readyNum`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MemberCluster is a workload cluster of the fleet. Flotilla creates one for
// each opted-in CAPI Cluster; its name is the Cluster's name, made unique
// when two CAPI namespaces hold Clusters of the same name.
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +required
	Spec MemberClusterSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status MemberClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MemberClusterList is a list of MemberCluster.
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemberCluster{}, &MemberClusterList{})
}
