package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=federatedresourcequotas,scope=Namespaced,shortName=frq,categories={flotilla}
// +kubebuilder:printcolumn:name="Overall",type=string,JSONPath=`.status.overall`
// +kubebuilder:printcolumn:name="Overall-Used",type=string,JSONPath=`.status.overallUsed`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// FederatedResourceQuota is one fleet-wide quota for the templates of a
// federated namespace: the scheduler places no replica that would take the
// namespace over spec.overall, whichever members it would land on.
type FederatedResourceQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the quota.
	// +required
	Spec FederatedResourceQuotaSpec `json:"spec"`

	// Status is the quota's usage.
	// +optional
	Status FederatedResourceQuotaStatus `json:"status,omitempty"`
}

// FederatedResourceQuotaSpec is the fleet-wide envelope and, optionally, a
// per-member share of it enforced in members by a ResourceQuota.
// Quantities are checked by the manager's validating webhook (not negative;
// static assignments name only resources of overall and do not sum past it):
// CEL cannot parse and sum quantities within the apiserver's cost budget.
type FederatedResourceQuotaSpec struct {
	// Overall is the fleet-wide limit per resource name (cpu, memory,
	// requests.*, limits.*, pods, extended resources, count/<resource>).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	// +required
	Overall corev1.ResourceList `json:"overall"`

	// StaticAssignments give named members a fixed share, enforced in each by
	// a ResourceQuota of the same namespace.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.clusterName == a.clusterName))",message="clusterName must be unique within staticAssignments"
	// +optional
	StaticAssignments []StaticClusterAssignment `json:"staticAssignments,omitempty"`
}

// StaticClusterAssignment is one member's fixed share of the quota.
type StaticClusterAssignment struct {
	// ClusterName is the member.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClusterName string `json:"clusterName"`

	// Hard is the member's share per resource name.
	// +kubebuilder:validation:MaxProperties=64
	// +required
	Hard corev1.ResourceList `json:"hard"`
}

// FederatedResourceQuotaStatus is the quota's usage, fleet-wide and per member.
type FederatedResourceQuotaStatus struct {
	// Overall is the enforced limit, copied from spec.overall once in force.
	// +optional
	Overall corev1.ResourceList `json:"overall,omitempty"`

	// OverallUsed is what the namespace's scheduled bindings use.
	// +optional
	OverallUsed corev1.ResourceList `json:"overallUsed,omitempty"`

	// AggregatedStatus is the usage of each static assignment's ResourceQuota.
	// +optional
	AggregatedStatus []ClusterQuotaStatus `json:"aggregatedStatus,omitempty"`

	// Conditions say whether the quota is in force and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterQuotaStatus is one member's quota usage.
type ClusterQuotaStatus struct {
	// ClusterName is the member.
	// +required
	ClusterName string `json:"clusterName"`

	corev1.ResourceQuotaStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// FederatedResourceQuotaList is a list of FederatedResourceQuota.
type FederatedResourceQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedResourceQuota `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FederatedResourceQuota{}, &FederatedResourceQuotaList{})
}
