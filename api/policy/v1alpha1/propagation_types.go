package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=propagationpolicies,scope=Namespaced,shortName=pp,categories={flotilla}
// +kubebuilder:printcolumn:name="Replica-Scheduling",type=string,JSONPath=`.spec.placement.replicaScheduling.replicaSchedulingType`
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Propagating",type=string,JSONPath=`.status.conditions[?(@.type=="Propagating")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Propagating")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PropagationPolicy selects resource templates in its namespace and says which
// members they propagate to and how replicas are divided between them.
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired propagation.
	// +required
	Spec PropagationSpec `json:"spec"`

	// Status says whether the policy propagates what it selects, and if not, why.
	// +optional
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// PropagationPolicyStatus is what the policy's selection amounts to.
// Flotilla extension: Karmada's policies have no status.
type PropagationPolicyStatus struct {
	// Conditions: Propagating.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PropagationSpec is the desired propagation of the selected resource templates.
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || !has(self.failover.application) || !has(self.failover.application.purgeMode) || self.failover.application.purgeMode != 'Gracefully' || has(self.failover.application.gracePeriodSeconds)",message="failover.application.gracePeriodSeconds is required when purgeMode is Gracefully",fieldPath=".failover.application"
type PropagationSpec struct {
	// ResourceSelectors selects the resource templates this policy propagates.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +required
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// Association is kept for compatibility with Karmada manifests and has no
	// effect: use PropagateDeps.
	// +optional
	Association bool `json:"association,omitempty"`

	// PropagateDeps carries the ConfigMaps, Secrets, ServiceAccounts and
	// PersistentVolumeClaims a workload references to the same members.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// Placement says where the selected templates go.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Priority orders policies that select the same template: the higher wins.
	// +kubebuilder:default=0
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Preemption says whether this policy may take templates claimed by a
	// policy of lower priority.
	// +kubebuilder:default="Never"
	// +kubebuilder:validation:Enum=Always;Never
	// +optional
	Preemption PreemptionBehavior `json:"preemption,omitempty"`

	// DependentOverrides lists OverridePolicies that must exist before the
	// selected templates propagate.
	// +optional
	DependentOverrides []string `json:"dependentOverrides,omitempty"`

	// SchedulerName names the scheduler that places the templates.
	// +kubebuilder:default="default-scheduler"
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover says how workloads move when a member fails.
	// +optional
	Failover *FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution says what to do when an object of the same name
	// already exists in a member and was not created by Flotilla: Abort leaves
	// it and reports the conflict, Overwrite takes it over. Taking over is a
	// cluster admin's decision: Overwrite is honoured from a
	// ClusterPropagationPolicy, and from a PropagationPolicy only in a
	// namespace labelled policy.flotilla.io/allow-overwrite=true; elsewhere it
	// acts as Abort and the conflict's message says why.
	// +kubebuilder:default="Abort"
	// +kubebuilder:validation:Enum=Abort;Overwrite
	// +optional
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// ActivationPreference Lazy applies policy changes only when the template
	// itself next changes.
	// +kubebuilder:validation:Enum=Lazy
	// +optional
	ActivationPreference ActivationPreference `json:"activationPreference,omitempty"`

	// Suspension pauses dispatching of the selected templates to members.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps the propagated objects in members when
	// the template is deleted from the hub.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders bindings in the scheduling queue.
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`
}

// ResourceSelector selects resource templates by kind, and by name or labels.
// When name is set the labelSelector is ignored, as in Karmada.
type ResourceSelector struct {
	// APIVersion of the target resources, e.g. apps/v1.
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the target resources, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`

	// Namespace of the target resources. Ignored for PropagationPolicy and
	// OverridePolicy, whose own namespace applies.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the target resource; empty selects every object of the kind.
	// +optional
	Name string `json:"name,omitempty"`

	// LabelSelector selects objects of the kind by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// FieldSelector selects members by field: provider, region or zone.
type FieldSelector struct {
	// MatchExpressions is a list of field selector requirements, ANDed.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	MatchExpressions []FieldSelectorRequirement `json:"matchExpressions,omitempty"`
}

// FieldSelectorRequirement is one requirement on a member field. Its JSON
// form is that of a NodeSelectorRequirement, as in Karmada.
type FieldSelectorRequirement struct {
	// Key is the member field: provider, region or zone.
	// +kubebuilder:validation:Enum=provider;region;zone
	// +required
	Key string `json:"key"`

	// Operator relates the field to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`

	// Values for In and NotIn.
	// +optional
	Values []string `json:"values,omitempty"`
}

// Suspension pauses dispatching of templates to members.
type Suspension struct {
	// Dispatching suspends dispatching to every member when true.
	// +optional
	Dispatching *bool `json:"dispatching,omitempty"`

	// DispatchingOnClusters suspends dispatching to the named members only.
	// +optional
	DispatchingOnClusters *SuspendClusters `json:"dispatchingOnClusters,omitempty"`
}

// SuspendClusters names the members whose dispatching is suspended.
type SuspendClusters struct {
	// ClusterNames are the member names.
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// PurgeMode says how an evicted member's copy of a workload is removed.
type PurgeMode string

const (
	// Never leaves the evicted copy in place for an operator to remove.
	Never PurgeMode = "Never"
	// PurgeModeDirectly removes the evicted copy before the replacement is created.
	PurgeModeDirectly PurgeMode = "Directly"
	// PurgeModeGracefully removes the evicted copy once the replacement is
	// healthy or the grace period has passed.
	PurgeModeGracefully PurgeMode = "Gracefully"
)

// FailoverBehavior says how workloads move off failed members.
type FailoverBehavior struct {
	// Application failover moves a workload that is unhealthy on a member.
	// +optional
	Application *ApplicationFailoverBehavior `json:"application,omitempty"`

	// Cluster failover moves workloads off a member tainted NoExecute.
	// +optional
	Cluster *ClusterFailoverBehavior `json:"cluster,omitempty"`
}

// ApplicationFailoverBehavior says when and how an unhealthy workload moves.
type ApplicationFailoverBehavior struct {
	// DecisionConditions say when the workload counts as failed.
	// +required
	DecisionConditions DecisionConditions `json:"decisionConditions"`

	// PurgeMode says how the failed copy is removed.
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never
	// +kubebuilder:default=Gracefully
	// +optional
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// GracePeriodSeconds bounds how long a Gracefully purged copy is kept.
	// +kubebuilder:validation:Minimum=1
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// StatePreservation carries state from the failed copy to its replacement.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// ClusterFailoverBehavior says how workloads leave a failed member.
type ClusterFailoverBehavior struct {
	// PurgeMode says how the failed member's copy is removed.
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never
	// +kubebuilder:default=Gracefully
	// +optional
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// StatePreservation carries state from the failed copy to its replacement.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`

	// Failback returns replicas to the placement the policy asks for when the
	// member recovers. Flotilla extension; off by default.
	// +optional
	Failback *bool `json:"failback,omitempty"`
}

// DecisionConditions say when an application counts as failed.
type DecisionConditions struct {
	// TolerationSeconds is how long the workload may stay unhealthy.
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +optional
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// StatePreservation lists the state carried from a failed copy.
type StatePreservation struct {
	// Rules extract values from the failed copy's status into labels.
	// +kubebuilder:validation:MinItems=1
	// +required
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule extracts one value into one label.
type StatePreservationRule struct {
	// AliasLabelName is the label that carries the value.
	// +kubebuilder:validation:MinLength=1
	// +required
	AliasLabelName string `json:"aliasLabelName"`

	// JSONPath selects the value in the failed copy's status.
	// +kubebuilder:validation:MinLength=1
	// +required
	JSONPath string `json:"jsonPath"`
}

// Placement says where templates go and how replicas are divided.
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterAffinity) && has(self.clusterAffinities))",message="clusterAffinity and clusterAffinities are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.spreadConstraints) || !self.spreadConstraints.exists(c, has(c.spreadByField) && c.spreadByField != '') || self.spreadConstraints.exists(c, has(c.spreadByField) && c.spreadByField == 'cluster')",message="a spreadByField constraint on region, zone or provider needs a spreadByField: cluster constraint as well",fieldPath=".spreadConstraints"
type Placement struct {
	// ClusterAffinity restricts the members the template may go to.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// ClusterAffinities are affinity terms tried in order: the scheduler uses
	// the first term whose members can hold the workload.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.affinityName == a.affinityName))",message="affinityName must be unique within clusterAffinities"
	// +optional
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`

	// ClusterTolerations let the template go to members with matching taints.
	// +optional
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`

	// SpreadConstraints spread the template over groups of members.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// ReplicaScheduling says how replicas are divided between members.
	// +optional
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`

	// WorkloadAffinity is kept for compatibility with Karmada manifests; not
	// yet acted upon.
	// +optional
	WorkloadAffinity *WorkloadAffinity `json:"workloadAffinity,omitempty"`
}

// SpreadFieldValue is a member field to spread over.
type SpreadFieldValue string

const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint spreads a template over groups of members that share a
// field or label value, between minGroups and maxGroups groups.
// +kubebuilder:validation:XValidation:rule="!(has(self.spreadByField) && self.spreadByField != '' && has(self.spreadByLabel) && self.spreadByLabel != '')",message="spreadByField and spreadByLabel are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="(has(self.spreadByField) && self.spreadByField != '') || (has(self.spreadByLabel) && self.spreadByLabel != '')",message="one of spreadByField or spreadByLabel is required"
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || self.maxGroups == 0 || self.maxGroups >= (has(self.minGroups) ? self.minGroups : 0)",message="maxGroups must be greater than or equal to minGroups",fieldPath=".maxGroups"
type SpreadConstraint struct {
	// SpreadByField groups members by cluster, region, zone or provider.
	// +kubebuilder:validation:Enum=cluster;region;zone;provider
	// +optional
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`

	// SpreadByLabel groups members by the value of this label.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	SpreadByLabel string `json:"spreadByLabel,omitempty"`

	// MaxGroups is the most groups to place in; 0 means no limit.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxGroups int `json:"maxGroups,omitempty"`

	// MinGroups is the fewest groups to place in.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinGroups int `json:"minGroups,omitempty"`
}

// ClusterAffinity selects members by name, label and field; all given
// criteria must match, and Exclude always wins.
type ClusterAffinity struct {
	// LabelSelector selects members by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector selects members by provider, region or zone.
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames lists the members selected by name.
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// ExcludeClusters lists members never selected.
	// +optional
	ExcludeClusters []string `json:"exclude,omitempty"`
}

// ClusterAffinityTerm is one named affinity term of an ordered list.
type ClusterAffinityTerm struct {
	// AffinityName names the term; it is shown in the binding's status when
	// the term is in force.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`

	// OverflowAffinities are kept for compatibility with Karmada manifests;
	// not yet acted upon.
	// +optional
	OverflowAffinities []OverflowClusterAffinity `json:"overflowAffinities,omitempty"`
}

// WorkloadAffinity groups workloads on or away from the same members.
type WorkloadAffinity struct {
	// Affinity co-locates workloads that share a label value.
	// +optional
	Affinity *WorkloadAffinityTerm `json:"affinity,omitempty"`

	// AntiAffinity separates workloads that share a label value.
	// +optional
	AntiAffinity *WorkloadAntiAffinityTerm `json:"antiAffinity,omitempty"`
}

// WorkloadAntiAffinityTerm names the label that groups workloads apart.
type WorkloadAntiAffinityTerm struct {
	// GroupByLabelKey is the label whose value groups workloads.
	// +kubebuilder:validation:MinLength=1
	// +required
	GroupByLabelKey string `json:"groupByLabelKey"`
}

// WorkloadAffinityTerm names the label that groups workloads together.
type WorkloadAffinityTerm struct {
	// GroupByLabelKey is the label whose value groups workloads.
	// +kubebuilder:validation:MinLength=1
	// +required
	GroupByLabelKey string `json:"groupByLabelKey"`
}

// OverflowClusterAffinity is an affinity term used when the primary is full.
type OverflowClusterAffinity struct {
	// AffinityName names the term.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +required
	AffinityName string `json:"affinityName"`

	ClusterAffinity `json:",inline"`
}

// ReplicaSchedulingType says whether members get all replicas or a share.
type ReplicaSchedulingType string

const (
	// ReplicaSchedulingTypeDuplicated gives every selected member all replicas.
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	// ReplicaSchedulingTypeDivided divides replicas between selected members.
	ReplicaSchedulingTypeDivided ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference says how Divided replicas are shared.
type ReplicaDivisionPreference string

const (
	// ReplicaDivisionPreferenceAggregated uses as few members as can hold them.
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	// ReplicaDivisionPreferenceWeighted shares by static or dynamic weight.
	ReplicaDivisionPreferenceWeighted ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy says how replicas are divided between members.
// +kubebuilder:validation:XValidation:rule="!has(self.replicaSchedulingType) || self.replicaSchedulingType != 'Duplicated' || !has(self.replicaDivisionPreference)",message="replicaDivisionPreference applies only to replicaSchedulingType Divided"
// +kubebuilder:validation:XValidation:rule="!has(self.weightPreference) || (has(self.replicaDivisionPreference) && self.replicaDivisionPreference == 'Weighted')",message="weightPreference needs replicaDivisionPreference: Weighted"
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated or Divided.
	// +kubebuilder:validation:Enum=Duplicated;Divided
	// +kubebuilder:default=Divided
	// +optional
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`

	// ReplicaDivisionPreference is Aggregated or Weighted, for Divided.
	// +kubebuilder:validation:Enum=Aggregated;Weighted
	// +optional
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`

	// WeightPreference gives the weights for Weighted division; without it
	// every member weighs the same.
	// +optional
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// ClusterPreferences are static weights or a dynamic weight factor.
// +kubebuilder:validation:XValidation:rule="!(has(self.staticWeightList) && size(self.staticWeightList) > 0 && has(self.dynamicWeight) && self.dynamicWeight != '')",message="staticWeightList and dynamicWeight are mutually exclusive"
type ClusterPreferences struct {
	// StaticWeightList gives members fixed weights; a member takes the highest
	// weight among the entries that select it.
	// +optional
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`

	// DynamicWeight weighs members by what they can hold now.
	// +kubebuilder:validation:Enum=AvailableReplicas
	// +optional
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight is the weight of the members one affinity selects.
type StaticClusterWeight struct {
	// TargetCluster selects the members.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// Weight of the selected members, at least 1.
	// +kubebuilder:validation:Minimum=1
	// +required
	Weight int64 `json:"weight"`
}

// DynamicWeightFactor is what a dynamic weight is computed from.
type DynamicWeightFactor string

const (
	// DynamicWeightByAvailableReplicas weighs a member by how many replicas fit.
	DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"
)

// PreemptionBehavior says whether a policy may take templates from another.
type PreemptionBehavior string

const (
	PreemptAlways PreemptionBehavior = "Always"
	PreemptNever  PreemptionBehavior = "Never"
)

// ConflictResolution says what to do with a pre-existing object in a member.
type ConflictResolution string

const (
	ConflictOverwrite ConflictResolution = "Overwrite"
	ConflictAbort     ConflictResolution = "Abort"
)

// ActivationPreference says when a policy change takes effect.
type ActivationPreference string

const (
	LazyActivation ActivationPreference = "Lazy"
)

// SchedulePriority orders bindings in the scheduling queue.
type SchedulePriority struct {
	// PriorityClassSource is where the priority class comes from.
	// +kubebuilder:validation:Enum=KubePriorityClass
	// +required
	PriorityClassSource PriorityClassSource `json:"priorityClassSource"`

	// PriorityClassName names the priority class.
	// +kubebuilder:validation:MinLength=1
	// +required
	PriorityClassName string `json:"priorityClassName"`
}

// PriorityClassSource is where a schedule priority comes from.
type PriorityClassSource string

const (
	FederatedPriorityClass PriorityClassSource = "FederatedPriorityClass"
	KubePriorityClass      PriorityClassSource = "KubePriorityClass"
	PodPriorityClass       PriorityClassSource = "PodPriorityClass"
)

// +kubebuilder:object:root=true

// PropagationPolicyList is a list of PropagationPolicy.
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusterpropagationpolicies,scope=Cluster,shortName=cpp,categories={flotilla}
// +kubebuilder:printcolumn:name="Replica-Scheduling",type=string,JSONPath=`.spec.placement.replicaScheduling.replicaSchedulingType`
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Propagating",type=string,JSONPath=`.status.conditions[?(@.type=="Propagating")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Propagating")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterPropagationPolicy is a PropagationPolicy for cluster-scoped templates
// and for templates in any federated namespace.
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired propagation.
	// +required
	Spec PropagationSpec `json:"spec"`

	// Status says whether the policy propagates what it selects, and if not, why.
	// +optional
	Status PropagationPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterPropagationPolicyList is a list of ClusterPropagationPolicy.
type ClusterPropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagationPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PropagationPolicy{}, &PropagationPolicyList{},
		&ClusterPropagationPolicy{}, &ClusterPropagationPolicyList{})
}

// Condition types and reasons of PropagationPolicy and ClusterPropagationPolicy.
const (
	// ConditionPropagating is True when the policy claims at least one
	// template and propagates it.
	ConditionPropagating = "Propagating"

	// PropagatingReason: the policy propagates the templates it claims.
	PropagatingReason = "Propagating"
	// NamespaceNotFederatedReason: templates the policy selects live in a
	// namespace without the FederatedLabel, so they stay on the hub.
	NamespaceNotFederatedReason = "NamespaceNotFederated"
	// NoMatchingTemplatesReason: no template matches the resourceSelectors.
	NoMatchingTemplatesReason = "NoMatchingTemplates"
	// ClaimedByOtherPoliciesReason: every template the policy selects is
	// claimed by another policy (one that claimed it first, or one of higher
	// precedence).
	ClaimedByOtherPoliciesReason = "ClaimedByOtherPolicies"
	// InvalidResourceSelectorReason: a resourceSelector cannot be evaluated,
	// e.g. a malformed apiVersion or labelSelector.
	InvalidResourceSelectorReason = "InvalidResourceSelector"
	// UnknownResourceKindReason: the hub serves no resource of a selected
	// apiVersion and kind (e.g. its CRD is not installed on the hub).
	UnknownResourceKindReason = "UnknownResourceKind"
)

// GetConditions returns the policy's conditions; with SetConditions it lets
// Cluster API's conditions and patch utilities handle a PropagationPolicy.
func (p *PropagationPolicy) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the policy's conditions.
func (p *PropagationPolicy) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }

// GetConditions returns the policy's conditions.
func (p *ClusterPropagationPolicy) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the policy's conditions.
func (p *ClusterPropagationPolicy) SetConditions(c []metav1.Condition) { p.Status.Conditions = c }
