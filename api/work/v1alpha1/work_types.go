package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// WorkSpec is what one member receives.
type WorkSpec struct {
	// Workload holds the rendered manifests.
	// +optional
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// SuspendDispatching stops applying this Work to the member.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion keeps the objects in the member when the
	// Work is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// ConflictResolution says what to do with an object of the same name that
	// exists in the member and is not managed by Flotilla: Abort (default)
	// leaves it and reports the conflict, Overwrite takes it over. Decided by
	// the binding controller from the binding: Overwrite only from a
	// ClusterPropagationPolicy, a ClusterResourceBinding or a namespace
	// labelled policy.flotilla.io/allow-overwrite=true, else Abort with the
	// annotation work.flotilla.io/overwrite-refused saying why. Flotilla
	// extension (Karmada carries it in an annotation).
	// +kubebuilder:validation:Enum=Abort;Overwrite
	// +optional
	ConflictResolution policyv1alpha1.ConflictResolution `json:"conflictResolution,omitempty"`
}

// WorkloadTemplate is a list of manifests.
type WorkloadTemplate struct {
	// Manifests are the objects applied to the member.
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one object applied to the member.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:EmbeddedResource
type Manifest struct {
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is how the Work's manifests are doing in the member.
type WorkStatus struct {
	// Conditions: Applied, Available, Dispatching.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManifestStatuses is the state of each manifest in the member.
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// ManifestStatus is one manifest's state in the member.
type ManifestStatus struct {
	// Identifier names the manifest.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Status is the object's status in the member.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health of the object.
	// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
	// +optional
	Health ResourceHealth `json:"health,omitempty"`

	// Applied is whether the manifest was applied. Flotilla extension.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// Message says why it was not applied or is not healthy. Flotilla extension.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceIdentifier names a manifest of a Work.
type ResourceIdentifier struct {
	// Ordinal is the manifest's index in the Work.
	// +required
	Ordinal int `json:"ordinal"`

	// Group of the object.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the object.
	// +required
	Version string `json:"version"`

	// Kind of the object.
	// +required
	Kind string `json:"kind"`

	// Resource is the plural resource name.
	// +required
	Resource string `json:"resource"`

	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +required
	Name string `json:"name"`
}

// Work condition types.
const (
	WorkApplied     = "Applied"
	WorkProgressing = "Progressing"
	WorkAvailable   = "Available"
	WorkDegraded    = "Degraded"
	WorkDispatching = "Dispatching"
)

// Work condition reasons.
const (
	// WorkReasonApplied: every manifest is applied (Applied=True).
	WorkReasonApplied = "Applied"
	// WorkReasonAPINotEnabled: the member serves no resource for a
	// manifest's apiVersion and kind.
	WorkReasonAPINotEnabled = "APINotEnabled"
	// WorkReasonConflict: an object exists in the member, is not managed by
	// Flotilla, and conflictResolution is Abort.
	WorkReasonConflict = "Conflict"
	// WorkReasonApplyFailed: the member rejected a manifest.
	WorkReasonApplyFailed = "ApplyFailed"
	// WorkReasonMemberUnavailable: no client for the member (not enrolled,
	// identity missing, unreachable).
	WorkReasonMemberUnavailable = "MemberUnavailable"
	// WorkReasonMemberUnreachable: the member did not answer the hub's last
	// request (hung, slow past the timeout, or down); the Work is tried again
	// after a backoff, and at once when the member answers.
	WorkReasonMemberUnreachable = "MemberUnreachable"
	// WorkReasonInvalidManifest: a manifest cannot be decoded.
	WorkReasonInvalidManifest = "InvalidManifest"
	// WorkReasonAvailable / WorkReasonNotAvailable: every applied object is
	// healthy, or some is not yet (Available).
	WorkReasonAvailable    = "Available"
	WorkReasonNotAvailable = "NotAvailable"
	// WorkReasonDispatching / WorkReasonSuspended: the Work is applied, or
	// left alone because spec.suspendDispatching is true (Dispatching).
	WorkReasonDispatching = "Dispatching"
	WorkReasonSuspended   = "Suspended"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=works,scope=Namespaced,categories={flotilla}
// +kubebuilder:printcolumn:name="Workload-Kind",type=string,JSONPath=`.spec.workload.manifests[0].kind`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Work is what one member receives for one binding: the rendered manifests,
// with the member's replicas and overrides applied. It lives in the member's
// execution namespace flotilla-es-<member>.
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the manifests.
	// +required
	Spec WorkSpec `json:"spec"`

	// Status is their state in the member.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkList is a list of Work.
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Work{}, &WorkList{})
}

// GetConditions returns the Work's conditions; with SetConditions it lets
// Cluster API's conditions and patch utilities handle a Work.
func (w *Work) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the Work's conditions.
func (w *Work) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }
