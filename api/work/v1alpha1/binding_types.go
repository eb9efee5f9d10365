package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// ResourceBindingSpec is a template's placement: what it needs, where the
// policy allows it, and (written by the scheduler) where it goes.
type ResourceBindingSpec struct {
	// Resource is the template.
	// +required
	Resource ObjectReference `json:"resource"`

	// PropagateDeps carries the template's dependencies along.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// ReplicaRequirements is what one replica needs.
	// +optional
	ReplicaRequirements *ReplicaRequirements `json:"replicaRequirements,omitempty"`

	// Replicas is the template's desired replica count.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Components describe workloads of several pod templates.
	// +optional
	Components []Component `json:"components,omitempty"`

	// Clusters is the scheduler's result: members and their replicas.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`

	// Placement is copied from the policy that claims the template.
	// +optional
	Placement *policyv1alpha1.Placement `json:"placement,omitempty"`

	// GracefulEvictionTasks hold evicted members' copies until their
	// replacements are healthy or the grace period passes.
	// +optional
	GracefulEvictionTasks []GracefulEvictionTask `json:"gracefulEvictionTasks,omitempty"`

	// RequiredBy lists the bindings that depend on this one (propagateDeps).
	// +optional
	RequiredBy []BindingSnapshot `json:"requiredBy,omitempty"`

	// SchedulerName is the scheduler that places this binding.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover is copied from the policy.
	// +optional
	Failover *policyv1alpha1.FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution is copied from the policy as written; the Works
	// apply Overwrite only when a cluster admin decided it (a
	// ClusterPropagationPolicy's claim, a ClusterResourceBinding, or a
	// namespace labelled policy.flotilla.io/allow-overwrite=true).
	// +kubebuilder:validation:Enum=Abort;Overwrite
	// +optional
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`

	// RescheduleTriggeredAt, when later than status.lastScheduledTime, asks
	// for a full rebalance instead of the least-movement update.
	// +optional
	RescheduleTriggeredAt *metav1.Time `json:"rescheduleTriggeredAt,omitempty"`

	// Suspension is copied from the policy.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion is copied from the policy.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the binding in the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ObjectReference points at a resource template.
type ObjectReference struct {
	// APIVersion of the template.
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the template.
	// +required
	Kind string `json:"kind"`

	// Namespace of the template; empty for cluster-scoped templates.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template.
	// +required
	Name string `json:"name"`

	// UID of the template.
	// +optional
	UID types.UID `json:"uid,omitempty"`

	// ResourceVersion of the template last rendered.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ReplicaRequirements is what one replica needs.
type ReplicaRequirements struct {
	// NodeClaim is where a replica's Pod may run within a member.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`

	// ResourceRequest is one replica's requests.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`

	// ResourceLimits is one replica's limits, for limits.* quota keys.
	// Flotilla extension.
	// +optional
	ResourceLimits corev1.ResourceList `json:"resourceLimits,omitempty"`

	// Namespace of the replica's Pods.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// PriorityClassName of the replica's Pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// Component is one pod template of a multi-template workload.
type Component struct {
	// Name of the component.
	// +required
	Name string `json:"name"`

	// Replicas of the component.
	// +required
	Replicas int32 `json:"replicas"`

	// ReplicaRequirements of one replica of the component.
	// +optional
	ReplicaRequirements *ComponentReplicaRequirements `json:"replicaRequirements,omitempty"`
}

// ComponentReplicaRequirements is what one replica of a component needs.
type ComponentReplicaRequirements struct {
	// NodeClaim is where its Pod may run.
	// +optional
	NodeClaim *NodeClaim `json:"nodeClaim,omitempty"`

	// ResourceRequest is its requests.
	// +optional
	ResourceRequest corev1.ResourceList `json:"resourceRequest,omitempty"`

	// PriorityClassName of its Pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NodeClaim is a Pod's node affinity, node selector and tolerations.
type NodeClaim struct {
	// HardNodeAffinity is the Pod's required node affinity.
	// +optional
	HardNodeAffinity *corev1.NodeSelector `json:"hardNodeAffinity,omitempty"`

	// NodeSelector is the Pod's node selector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are the Pod's tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// TargetCluster is one member of a placement and its replicas.
type TargetCluster struct {
	// Name of the member.
	// +required
	Name string `json:"name"`

	// Replicas placed on the member.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Components placed on the member.
	// +optional
	Components []TargetComponent `json:"components,omitempty"`
}

// TargetComponent is one component's replicas on a member.
type TargetComponent struct {
	// Name of the component.
	// +required
	Name string `json:"name"`

	// Replicas of it.
	// +required
	Replicas int32 `json:"replicas"`
}

// GracefulEvictionTask keeps an evicted member's copy until its replacement is
// healthy, the grace period passes, or (Directly) removes it first.
type GracefulEvictionTask struct {
	// FromCluster is the evicted member.
	// +required
	FromCluster string `json:"fromCluster"`

	// PurgeMode is Directly, Gracefully or Never.
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never
	// +optional
	PurgeMode policyv1alpha1.PurgeMode `json:"purgeMode,omitempty"`

	// Replicas the evicted member held.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Reason of the eviction, e.g. TaintUntolerated.
	// +required
	Reason string `json:"reason"`

	// Message says why in words.
	// +optional
	Message string `json:"message,omitempty"`

	// Producer is the controller that evicted it.
	// +required
	Producer string `json:"producer"`

	// GracePeriodSeconds bounds how long the copy is kept.
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// SuppressDeletion keeps the copy until set to false.
	// +optional
	SuppressDeletion *bool `json:"suppressDeletion,omitempty"`

	// PreservedLabelState is state carried to the replacement.
	// +optional
	PreservedLabelState map[string]string `json:"preservedLabelState,omitempty"`

	// CreationTimestamp is when the eviction began.
	// +optional
	CreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`

	// ClustersBeforeFailover is the placement before the eviction.
	// +optional
	ClustersBeforeFailover []string `json:"clustersBeforeFailover,omitempty"`
}

// BindingSnapshot names a dependent binding and its placement.
type BindingSnapshot struct {
	// Namespace of the binding.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the binding.
	// +required
	Name string `json:"name"`

	// Clusters of the binding.
	// +optional
	Clusters []TargetCluster `json:"clusters,omitempty"`
}

// Suspension pauses dispatching, and optionally scheduling, of a binding.
type Suspension struct {
	policyv1alpha1.Suspension `json:",inline"`

	// Scheduling suspends scheduling of the binding.
	// +optional
	Scheduling *bool `json:"scheduling,omitempty"`
}

// SchedulePriority is a binding's priority in the scheduling queue.
type SchedulePriority struct {
	// Priority, higher first.
	// +optional
	Priority int32 `json:"priority,omitempty"`
}

// ResourceBindingStatus is where the binding went and how it is doing.
type ResourceBindingStatus struct {
	// SchedulerObservedGeneration is the generation the scheduler last placed.
	// +optional
	SchedulerObservedGeneration int64 `json:"schedulerObservedGeneration,omitempty"`

	// SchedulerObservedAffinityName is the affinity term in force.
	// +optional
	SchedulerObservedAffinityName string `json:"schedulerObservingAffinityName,omitempty"`

	// LastScheduledTime is when the scheduler last placed the binding.
	// +optional
	LastScheduledTime *metav1.Time `json:"lastScheduledTime,omitempty"`

	// Conditions: Scheduled and FullyApplied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// AggregatedStatus is the template's status on each member.
	// +optional
	AggregatedStatus []AggregatedStatusItem `json:"aggregatedStatus,omitempty"`

	// SchedulingDecision explains the last scheduling decision: the affinity
	// terms tried, the members filtered out and why, scores and capacity.
	// +optional
	SchedulingDecision *SchedulingDecision `json:"schedulingDecision,omitempty"`

	// Replicas, ReadyReplicas, AvailableReplicas and UpdatedReplicas sum the
	// same fields of the template's status over its members, for workloads
	// that report them (Deployment, StatefulSet, ReplicaSet). Flotilla
	// extension, named like a Deployment's status.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// RenderedUsage is what the binding's Works carry, counted as the
	// members' ResourceQuotas count it (requests and limits after
	// overrides, envelope contents; resources summed over members, object
	// counts of the largest member), for its namespace's
	// FederatedResourceQuotas: the binding uses the larger of this and its
	// placement's replicas × replicaRequirements, key by key. Written by
	// the binding controller when it renders the Works (ResourceBindings
	// only); the quota tracker rebuilds from it after a restart. Flotilla
	// extension.
	// +optional
	RenderedUsage corev1.ResourceList `json:"renderedUsage,omitempty"`
}

// AggregatedStatusItem is the template's status on one member.
type AggregatedStatusItem struct {
	// ClusterName is the member.
	// +required
	ClusterName string `json:"clusterName"`

	// Status is the object's status in the member.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Applied is whether the object was applied to the member.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// AppliedMessage says why it was not.
	// +optional
	AppliedMessage string `json:"appliedMessage,omitempty"`

	// Health of the object in the member.
	// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
	// +optional
	Health ResourceHealth `json:"health,omitempty"`

	// HealthTransitionTime is when Health last changed: application
	// failover counts decisionConditions.tolerationSeconds from it.
	// Flotilla extension.
	// +optional
	HealthTransitionTime *metav1.Time `json:"healthTransitionTime,omitempty"`
}

// Binding condition types and reasons.
const (
	// ConditionScheduled is True when the binding is placed.
	ConditionScheduled = "Scheduled"
	// ConditionFullyApplied is True when every member applied its Work.
	ConditionFullyApplied = "FullyApplied"
	// ConditionInterpreted is False, reason InterpreterFailed, while a
	// ResourceInterpreterCustomization's script cannot read the template
	// (the spec keeps what was last read); absent otherwise.
	ConditionInterpreted = "Interpreted"
	// ConditionStatusAggregated is True when a
	// ResourceInterpreterCustomization's statusAggregation wrote the
	// template's status from its members', False (reason InterpreterFailed)
	// when the script failed; absent for kinds no customization aggregates.
	ConditionStatusAggregated = "StatusAggregated"
	// ConditionRendered is True when a Work is rendered for every member of
	// spec.clusters.
	ConditionRendered = "Rendered"

	BindingReasonSuccess        = "Success"
	BindingReasonSchedulerError = "SchedulerError"
	BindingReasonNoClusterFit   = "NoClusterFit"
	BindingReasonUnschedulable  = "Unschedulable"
	BindingReasonQuotaExceeded  = "QuotaExceeded"
	// BindingReasonPartiallyScheduled: Scheduled=False while the placement
	// in force gives less than the policy asks (a Duplicated binding left
	// off members its affinity selects, for capacity); the message names
	// them and why. The binding runs where it was placed and is decided
	// again when one of them has room.
	BindingReasonPartiallyScheduled = "PartiallyScheduled"

	// Reasons of Rendered (and QuotaExceeded: a member's Work would take
	// the namespace past a FederatedResourceQuota and is not written).
	BindingReasonRendered         = "Rendered"
	BindingReasonNotScheduled     = "NotScheduled"
	BindingReasonTemplateNotFound = "TemplateNotFound"
	BindingReasonOverrideFailed   = "OverrideFailed"
	BindingReasonInvalidEnvelope  = "InvalidEnvelope"
	BindingReasonMemberNotFound   = "MemberNotFound"
	BindingReasonRenderFailed     = "RenderFailed"
	// BindingReasonInterpreterFailed: a ResourceInterpreterCustomization's
	// script failed on the template; the message has its error.
	BindingReasonInterpreterFailed = "InterpreterFailed"
	// BindingReasonForbiddenObject: an object a binding would render breaks a
	// tenancy rule (internal/tenancy: a ResourceBinding's objects stay in its
	// namespace; no Service with externalIPs unless its namespace allows
	// them) and is left out of the Work.
	BindingReasonForbiddenObject = "ForbiddenObject"
	// BindingReasonWorkTooLarge: a member's Work would exceed the size the
	// hub's etcd stores; the message gives its size and the limit, and the
	// member keeps its previous Work.
	BindingReasonWorkTooLarge = "WorkTooLarge"
	// BindingReasonTemplateOutsideNamespace: a ResourceBinding's
	// spec.resource names another namespace; nothing is rendered.
	BindingReasonTemplateOutsideNamespace = "TemplateOutsideNamespace"
	// BindingReasonNamespaceNotFederated: the binding's namespace lost its
	// federated label; its Works are kept as they are, not re-rendered,
	// until the label is back.
	BindingReasonNamespaceNotFederated = "NamespaceNotFederated"

	// BindingReasonStatusAggregated: the template's status was written.
	BindingReasonStatusAggregated = "StatusAggregated"

	// Reasons of FullyApplied.
	BindingReasonFullyApplied    = "FullyApplied"
	BindingReasonNotFullyApplied = "NotFullyApplied"
)

// ResourceHealth is Healthy, Unhealthy or Unknown.
type ResourceHealth string

const (
	ResourceHealthy   ResourceHealth = "Healthy"
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	ResourceUnknown   ResourceHealth = "Unknown"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=resourcebindings,scope=Namespaced,shortName=rb,categories={flotilla}
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Fully-Applied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ResourceBinding ties a namespaced template to its placement.
type ResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template and its placement.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is how the placement is doing.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceBindingList is a list of ResourceBinding.
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceBinding `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusterresourcebindings,scope=Cluster,shortName=crb,categories={flotilla}
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Fully-Applied",type=string,JSONPath=`.status.conditions[?(@.type=="FullyApplied")].status`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterResourceBinding ties a cluster-scoped template to its placement.
type ClusterResourceBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the template and its placement.
	// +required
	Spec ResourceBindingSpec `json:"spec"`

	// Status is how the placement is doing.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterResourceBindingList is a list of ClusterResourceBinding.
type ClusterResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourceBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceBinding{}, &ResourceBindingList{},
		&ClusterResourceBinding{}, &ClusterResourceBindingList{})
}

// GetConditions returns the binding's conditions; with SetConditions it lets
// Cluster API's conditions and patch utilities handle a ResourceBinding.
func (b *ResourceBinding) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the binding's conditions.
func (b *ResourceBinding) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

// GetConditions returns the binding's conditions.
func (b *ClusterResourceBinding) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces the binding's conditions.
func (b *ClusterResourceBinding) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

// Binding is a ResourceBinding or a ClusterResourceBinding, for controllers
// that handle both alike.
// +kubebuilder:object:generate=false
type Binding interface {
	metav1.Object
	runtime.Object
	// BindingSpec and BindingStatus return the binding's own spec and status
	// (not copies).
	BindingSpec() *ResourceBindingSpec
	BindingStatus() *ResourceBindingStatus
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// BindingSpec returns the binding's spec.
func (b *ResourceBinding) BindingSpec() *ResourceBindingSpec { return &b.Spec }

// BindingStatus returns the binding's status.
func (b *ResourceBinding) BindingStatus() *ResourceBindingStatus { return &b.Status }

// BindingSpec returns the binding's spec.
func (b *ClusterResourceBinding) BindingSpec() *ResourceBindingSpec { return &b.Spec }

// BindingStatus returns the binding's status.
func (b *ClusterResourceBinding) BindingStatus() *ResourceBindingStatus { return &b.Status }
