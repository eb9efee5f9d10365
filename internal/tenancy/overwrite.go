package tenancy

import (
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Origin is what decides whether a binding may take over objects Flotilla
// did not create in members: the binding's kind and claim, and the labels
// of its hub namespace.
type Origin struct {
	// Requested is the binding's spec.conflictResolution ("" is Abort).
	Requested policyv1alpha1.ConflictResolution
	// ClusterScoped is true for a ClusterResourceBinding.
	ClusterScoped bool
	// Labels are the binding's labels (the claim labels tell its policy).
	Labels map[string]string
	// Annotations are the binding's annotations (they name its policy).
	Annotations map[string]string
	// Namespace is a ResourceBinding's namespace, NamespaceLabels its labels
	// on the hub (nil when the namespace cannot be read).
	Namespace       string
	NamespaceLabels map[string]string
}

// Takeover is the conflict resolution a binding's Works apply.
type Takeover struct {
	Resolution policyv1alpha1.ConflictResolution
	// Refused says why the binding's Overwrite is not honoured; "" when it
	// is, or when Overwrite was not asked for.
	Refused string
}

// ConflictResolution decides whether a binding's Works may take over an
// object a member already holds and Flotilla did not create. Taking over a
// member admin's object (a ResourceQuota, LimitRange or NetworkPolicy of
// the tenant's member namespace) is a cluster admin's decision: Overwrite
// is honoured for a ClusterResourceBinding, for a ResourceBinding claimed by
// a ClusterPropagationPolicy, and for one of a namespace labelled
// policy.flotilla.io/allow-overwrite=true. Anywhere else — a
// PropagationPolicy in an unmarked namespace, or a ResourceBinding claimed
// by no ClusterPropagationPolicy — Overwrite acts as Abort, and Refused says
// so for the conflict's message.
func ConflictResolution(o Origin) Takeover {
	if o.Requested != policyv1alpha1.ConflictOverwrite {
		return Takeover{Resolution: policyv1alpha1.ConflictAbort}
	}
	_, byCluster := o.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]
	_, byNamespaced := o.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel]
	switch {
	case o.ClusterScoped, byCluster && !byNamespaced, o.NamespaceLabels[policyv1alpha1.AllowOverwriteLabel] == "true":
		return Takeover{Resolution: policyv1alpha1.ConflictOverwrite}
	}
	policy := "its policy"
	if name := o.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation]; name != "" {
		policy = fmt.Sprintf("PropagationPolicy %s/%s", o.Namespace, name)
	}
	return Takeover{
		Resolution: policyv1alpha1.ConflictAbort,
		Refused: fmt.Sprintf("conflictResolution Overwrite of %s is not honoured, it acts as Abort: taking over an object Flotilla did not create is a cluster admin's decision — a ClusterPropagationPolicy, or the label %s=true on namespace %s",
			policy, policyv1alpha1.AllowOverwriteLabel, o.Namespace),
	}
}
