package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ric,categories=flotilla
// +kubebuilder:printcolumn:name="Target-API-Version",type=string,JSONPath=".spec.target.apiVersion"
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=".spec.target.kind"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"

// ResourceInterpreterCustomization tells Flotilla how to read one kind of
// object with Lua scripts: its replicas and what each needs, how to revise
// them, which member values to keep, its status and health, and what it
// depends on. Set operations take precedence over the built-in
// interpreter. When several customizations target the same kind, each
// operation comes from the first by name that sets it; dependency scripts
// all run and their results are joined (Karmada's rules).
type ResourceInterpreterCustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the customization.
	// +required
	Spec ResourceInterpreterCustomizationSpec `json:"spec"`
}

// ResourceInterpreterCustomizationSpec describes the customization.
type ResourceInterpreterCustomizationSpec struct {
	// Target is the kind the customization applies to.
	// +required
	Target CustomizationTarget `json:"target"`

	// Customizations are the scripts, one per operation.
	// +required
	Customizations CustomizationRules `json:"customizations"`
}

// CustomizationTarget is the kind a customization applies to.
type CustomizationTarget struct {
	// APIVersion of the target kind, group/version (or version for the core group).
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the target.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
}

// CustomizationRules holds one Lua script per operation; an operation
// without a script is done by the built-in interpreter.
type CustomizationRules struct {
	// Retention keeps values a member's own controllers set:
	// function Retain(desiredObj, observedObj) returning the object to apply.
	// +optional
	Retention *LuaScript `json:"retention,omitempty"`

	// ReplicaResource reads the replica count and what one replica needs:
	// function GetReplicas(desiredObj) returning replica, requirement.
	// +optional
	ReplicaResource *LuaScript `json:"replicaResource,omitempty"`

	// ReplicaRevision writes a member's share of replicas:
	// function ReviseReplica(desiredObj, desiredReplica) returning the object.
	// +optional
	ReplicaRevision *LuaScript `json:"replicaRevision,omitempty"`

	// StatusReflection picks the status kept on the hub for a member's copy:
	// function ReflectStatus(observedObj) returning the status.
	// +optional
	StatusReflection *LuaScript `json:"statusReflection,omitempty"`

	// StatusAggregation folds the members' statuses into the template's:
	// function AggregateStatus(desiredObj, statusItems) returning the object.
	// +optional
	StatusAggregation *LuaScript `json:"statusAggregation,omitempty"`

	// HealthInterpretation judges a member's copy healthy:
	// function InterpretHealth(observedObj) returning a boolean.
	// +optional
	HealthInterpretation *LuaScript `json:"healthInterpretation,omitempty"`

	// DependencyInterpretation lists what the object needs propagated with it:
	// function GetDependencies(desiredObj) returning a list of references.
	// +optional
	DependencyInterpretation *LuaScript `json:"dependencyInterpretation,omitempty"`

	// ComponentResource reads a multi-component workload's components
	// (Karmada's GetComponents). Accepted for compatibility and not yet acted
	// upon: see docs/api.md.
	// +optional
	ComponentResource *LuaScript `json:"componentResource,omitempty"`

	// ComponentRevision writes a member's share of each component (Karmada's
	// ReviseComponents). Accepted for compatibility and not yet acted upon.
	// +optional
	ComponentRevision *LuaScript `json:"componentRevision,omitempty"`
}

// LuaScript is a whole Lua function, declaration and body, named after the
// operation it implements.
type LuaScript struct {
	// LuaScript is the script's text.
	// +kubebuilder:validation:MinLength=1
	// +required
	LuaScript string `json:"luaScript"`
}

// +kubebuilder:object:root=true

// ResourceInterpreterCustomizationList is a list of ResourceInterpreterCustomization.
type ResourceInterpreterCustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceInterpreterCustomization `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceInterpreterCustomization{}, &ResourceInterpreterCustomizationList{})
}
