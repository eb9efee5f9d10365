package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clustertaintpolicies,scope=Cluster,shortName=ctp,categories={flotilla}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTaintPolicy turns member conditions into taints: when a member's
// conditions match addOnConditions the taints are added; when they match
// removeOnConditions the taints are removed.
type ClusterTaintPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec ClusterTaintPolicySpec `json:"spec"`
}

// ClusterTaintPolicySpec says which members, on which conditions, get which taints.
// +kubebuilder:validation:XValidation:rule="(has(self.addOnConditions) && size(self.addOnConditions) > 0) || (has(self.removeOnConditions) && size(self.removeOnConditions) > 0)",message="at least one of addOnConditions or removeOnConditions is required"
type ClusterTaintPolicySpec struct {
	// TargetClusters selects the members; nil selects every member.
	// +optional
	TargetClusters *ClusterAffinity `json:"targetClusters,omitempty"`

	// AddOnConditions, all matching, add the taints.
	// +optional
	AddOnConditions []MatchCondition `json:"addOnConditions,omitempty"`

	// RemoveOnConditions, all matching, remove the taints.
	// +optional
	RemoveOnConditions []MatchCondition `json:"removeOnConditions,omitempty"`

	// Taints are added or removed.
	// +kubebuilder:validation:MinItems=1
	// +required
	Taints []Taint `json:"taints"`
}

// MatchCondition matches one condition's status. ConditionType names a
// MemberCluster condition, or, prefixed with "capi:", a condition of the CAPI
// Cluster the member comes from (e.g. capi:RemoteConnectionProbe). Flotilla
// extension: the "capi:" prefix.
type MatchCondition struct {
	// ConditionType is the condition's type.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	ConditionType string `json:"conditionType"`

	// Operator is In or NotIn.
	// +kubebuilder:validation:Enum=In;NotIn
	// +required
	Operator MatchConditionOperator `json:"operator"`

	// StatusValues are the condition statuses compared against.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Enum=True;False;Unknown
	// +required
	StatusValues []metav1.ConditionStatus `json:"statusValues"`

	// ForSeconds is how long the condition must have matched (since its
	// lastTransitionTime) before this match counts; 0 counts at once.
	// Flotilla extension: it makes the brief's "NoSchedule at once, NoExecute
	// after a grace period" expressible as two policies.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ForSeconds *int32 `json:"forSeconds,omitempty"`
}

// MatchConditionOperator is In or NotIn.
type MatchConditionOperator string

const (
	MatchConditionOpIn    MatchConditionOperator = "In"
	MatchConditionOpNotIn MatchConditionOperator = "NotIn"
)

// Taint is a taint a policy manages.
type Taint struct {
	// Key of the taint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`

	// Effect is NoSchedule or NoExecute.
	// +kubebuilder:validation:Enum=NoSchedule;NoExecute
	// +required
	Effect corev1.TaintEffect `json:"effect"`

	// Value of the taint.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTaintPolicyList is a list of ClusterTaintPolicy.
type ClusterTaintPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTaintPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterTaintPolicy{}, &ClusterTaintPolicyList{})
}
