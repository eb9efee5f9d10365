// Package v1alpha1 holds the policy.flotilla.io API: what to propagate where
// (PropagationPolicy, ClusterPropagationPolicy), how to customise it per member
// (OverridePolicy, ClusterOverridePolicy), the fleet-wide tenant quota
// (FederatedResourceQuota) and how member health becomes taints
// (ClusterTaintPolicy). Field names follow Karmada's policy.karmada.io/v1alpha1
// so that Karmada manifests decode after changing only apiVersion.
//
// +kubebuilder:object:generate=true
// +groupName=policy.flotilla.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "policy.flotilla.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
