// Package v1alpha1 holds the work.flotilla.io API: ResourceBinding and
// ClusterResourceBinding (a template and its placement) and Work (what one
// member receives). Works live in the execution namespace flotilla-es-<member>.
//
// +kubebuilder:object:generate=true
// +groupName=work.flotilla.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "work.flotilla.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
