package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterResourceEnvelopeKind is the kind of ClusterResourceEnvelope, for
// code that handles it as an unstructured template.
const ClusterResourceEnvelopeKind = "ClusterResourceEnvelope"

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clusterresourceenvelopes,scope=Cluster,shortName=cre,categories={flotilla}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterResourceEnvelope carries objects to members that would act on the
// hub if they were created there — admission webhook configurations,
// APIServices, CRDs, ClusterRoles — and namespaced objects of any
// namespace. A ClusterPropagationPolicy selects it like any cluster-scoped
// template; in each member's Work it is replaced by the objects of data,
// after ClusterOverridePolicies are applied to it. The envelope itself never
// reaches a member, and nothing acts on it on the hub.
//
// It is cluster-scoped so that only a cluster admin writes it: the tenant
// roles do not grant it, a PropagationPolicy cannot select it, and its
// contents are not confined to a namespace (they travel through a
// ClusterResourceBinding). Tenants have the namespaced envelope, a
// ConfigMap labelled flotilla.io/envelope=true, whose contents stay in its
// namespace.
type ClusterResourceEnvelope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Data are the objects carried, each a whole manifest (apiVersion, kind,
	// metadata.name; metadata.namespace for an object of a namespaced kind),
	// under a key that names it in messages. Keys are read in sorted order,
	// which is the order of the objects in a member's Work.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && k.matches('^[-._a-zA-Z0-9]+$'))",message="keys must consist of alphanumeric characters, '-', '_' or '.', at most 253 (as ConfigMap keys)"
	Data map[string]EnvelopedManifest `json:"data,omitempty"`
}

// The CRD marks EnvelopedManifest an embedded resource
// (x-kubernetes-embedded-resource, added by hack/embed-map-values.sh in
// `make generate`: controller-gen's EmbeddedResource marker describes
// fields only, and a map value is not one), so that the API server requires
// apiVersion and kind, validates metadata as an object's, and the rule
// below can read metadata.name.

// EnvelopedManifest is one object a ClusterResourceEnvelope carries: a
// whole Kubernetes manifest. apiVersion, kind and metadata.name are
// required; metadata is validated as an object's.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.metadata) && has(self.metadata.name) && size(self.metadata.name) > 0",message="metadata.name is required"
type EnvelopedManifest struct {
	runtime.RawExtension `json:",inline"`
}

// +kubebuilder:object:root=true

// ClusterResourceEnvelopeList is a list of ClusterResourceEnvelope.
type ClusterResourceEnvelopeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterResourceEnvelope `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterResourceEnvelope{}, &ClusterResourceEnvelopeList{})
}
