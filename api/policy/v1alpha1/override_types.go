package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=overridepolicies,scope=Namespaced,shortName=op,categories={flotilla}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// OverridePolicy customises templates of its namespace per member.
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired customisation.
	// +required
	Spec OverrideSpec `json:"spec"`
}

// OverrideSpec says which templates to customise, on which members, and how.
// Every ClusterOverridePolicy applies before any OverridePolicy. Within one
// kind, policies apply from the least to the most specific selector that
// matches (all, then label selector, then name), ties by name, so the most
// specific applies last and wins. Rules apply in order.
type OverrideSpec struct {
	// ResourceSelectors selects the templates; empty selects every template.
	// +optional
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`

	// OverrideRules are member-targeted overriders, applied in order.
	// +optional
	OverrideRules []RuleWithCluster `json:"overrideRules,omitempty"`

	// TargetCluster is the deprecated single-rule form; use OverrideRules.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders is the deprecated single-rule form; use OverrideRules.
	// +optional
	Overriders Overriders `json:"overriders"`
}

// RuleWithCluster is a set of overriders for the members one affinity selects.
type RuleWithCluster struct {
	// TargetCluster selects the members; nil selects every member.
	// +optional
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`

	// Overriders are applied in the order image, command, args, labels,
	// annotations, field, and plaintext last.
	// +required
	Overriders Overriders `json:"overriders"`
}

// Overriders are the changes one rule makes.
type Overriders struct {
	// Plaintext applies JSON patch operations.
	// +optional
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`

	// ImageOverrider changes container images.
	// +optional
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`

	// CommandOverrider changes a container's command.
	// +optional
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`

	// ArgsOverrider changes a container's args.
	// +optional
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`

	// LabelsOverrider changes labels.
	// +optional
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`

	// AnnotationsOverrider changes annotations.
	// +optional
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`

	// FieldOverrider changes a JSON or YAML document embedded in a string field.
	// +optional
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
}

// LabelAnnotationOverrider adds, replaces or removes labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value holds the keys and values.
	// +optional
	Value map[string]string `json:"value"`
}

// ImageOverrider changes one component of container images.
// +kubebuilder:validation:XValidation:rule="self.operator == 'remove' || (has(self.value) && self.value != '')",message="value is required when operator is add or replace",fieldPath=".value"
type ImageOverrider struct {
	// Predicate restricts the overrider to the image at one path; without it
	// every container and init container image of a known workload kind changes.
	// +optional
	Predicate *ImagePredicate `json:"predicate,omitempty"`

	// Component is Registry, Repository or Tag.
	// +kubebuilder:validation:Enum=Registry;Repository;Tag
	// +required
	Component ImageComponent `json:"component"`

	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the new component value.
	// +optional
	Value string `json:"value,omitempty"`
}

// ImagePredicate selects one image by path.
type ImagePredicate struct {
	// Path is a JSON pointer to the image field, e.g.
	// /spec/template/spec/containers/0/image.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	Path string `json:"path"`
}

// ImageComponent is one part of an image reference.
type ImageComponent string

const (
	// Registry is the host, e.g. registry.k8s.io.
	Registry ImageComponent = "Registry"
	// Repository is the path, e.g. pause.
	Repository ImageComponent = "Repository"
	// Tag is the tag or digest, e.g. 3.9.
	Tag ImageComponent = "Tag"
)

// CommandArgsOverrider adds to or removes from a container's command or args.
type CommandArgsOverrider struct {
	// ContainerName names the container.
	// +kubebuilder:validation:MinLength=1
	// +required
	ContainerName string `json:"containerName"`

	// Operator is add or remove.
	// +kubebuilder:validation:Enum=add;remove
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value lists the items added or removed.
	// +optional
	Value []string `json:"value,omitempty"`
}

// PlaintextOverrider is one JSON patch operation.
type PlaintextOverrider struct {
	// Path is a JSON pointer, e.g. /spec/replicas.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	Path string `json:"path"`

	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the JSON value for add and replace.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// OverriderOperator is add, remove or replace.
type OverriderOperator string

const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// FieldOverrider patches a JSON or YAML document held in a string field,
// e.g. a key of a ConfigMap's data.
// +kubebuilder:validation:XValidation:rule="(has(self.json) && size(self.json) > 0) != (has(self.yaml) && size(self.yaml) > 0)",message="exactly one of json or yaml is required"
type FieldOverrider struct {
	// FieldPath is a JSON pointer to the string field, e.g. /data/config.yaml.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	FieldPath string `json:"fieldPath"`

	// JSON operations on the embedded JSON document.
	// +optional
	JSON []JSONPatchOperation `json:"json,omitempty"`

	// YAML operations on the embedded YAML document.
	// +optional
	YAML []YAMLPatchOperation `json:"yaml,omitempty"`
}

// JSONPatchOperation is one operation on an embedded JSON document.
type JSONPatchOperation struct {
	// SubPath is a JSON pointer inside the embedded document.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the value for add and replace.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// YAMLPatchOperation is one operation on an embedded YAML document.
type YAMLPatchOperation struct {
	// SubPath is a JSON pointer inside the embedded document.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	SubPath string `json:"subPath"`

	// Operator is add, remove or replace.
	// +kubebuilder:validation:Enum=add;remove;replace
	// +required
	Operator OverriderOperator `json:"operator"`

	// Value is the value for add and replace.
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// +kubebuilder:object:root=true

// OverridePolicyList is a list of OverridePolicy.
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clusteroverridepolicies,scope=Cluster,shortName=cop,categories={flotilla}
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterOverridePolicy customises templates of any namespace, and
// cluster-scoped templates, per member.
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired customisation.
	// +required
	Spec OverrideSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterOverridePolicyList is a list of ClusterOverridePolicy.
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OverridePolicy{}, &OverridePolicyList{},
		&ClusterOverridePolicy{}, &ClusterOverridePolicyList{})
}
