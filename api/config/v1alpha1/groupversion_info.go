// Package v1alpha1 holds the config.flotilla.io API: how Flotilla reads a
// kind it does not know (ResourceInterpreterCustomization). Field names
// follow Karmada's config.karmada.io/v1alpha1 so that a Karmada
// customization applies after changing only apiVersion.
//
// +kubebuilder:object:generate=true
// +groupName=config.flotilla.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "config.flotilla.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
