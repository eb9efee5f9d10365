package webhooks

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/policydefaults"
)

// +kubebuilder:webhook:path=/mutate-policy-flotilla-io-v1alpha1-propagationpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=policy.flotilla.io,resources=propagationpolicies,verbs=create;update,versions=v1alpha1,name=default.propagationpolicy.policy.flotilla.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-policy-flotilla-io-v1alpha1-clusterpropagationpolicy,mutating=true,failurePolicy=fail,sideEffects=None,groups=policy.flotilla.io,resources=clusterpropagationpolicies,verbs=create;update,versions=v1alpha1,name=default.clusterpropagationpolicy.policy.flotilla.io,admissionReviewVersions=v1

// PropagationPolicy fills in Karmada's defaults (internal/policydefaults)
// before the schema checks a PropagationPolicy: a Karmada document that
// leaves them out is accepted and means what it means in Karmada. A webhook
// because the defaults depend on other fields, which schema defaults
// cannot express.
type PropagationPolicy struct{}

var _ admission.Defaulter[*policyv1alpha1.PropagationPolicy] = PropagationPolicy{}

// SetupWithManager registers the webhook.
func (w PropagationPolicy) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.PropagationPolicy{}).WithDefaulter(w).Complete()
}

// Default applies Karmada's defaults.
func (PropagationPolicy) Default(_ context.Context, obj *policyv1alpha1.PropagationPolicy) error {
	policydefaults.Propagation(&obj.Spec)
	return nil
}

// ClusterPropagationPolicy is PropagationPolicy's defaulting for
// ClusterPropagationPolicies.
type ClusterPropagationPolicy struct{}

var _ admission.Defaulter[*policyv1alpha1.ClusterPropagationPolicy] = ClusterPropagationPolicy{}

// SetupWithManager registers the webhook.
func (w ClusterPropagationPolicy) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.ClusterPropagationPolicy{}).WithDefaulter(w).Complete()
}

// Default applies Karmada's defaults.
func (ClusterPropagationPolicy) Default(_ context.Context, obj *policyv1alpha1.ClusterPropagationPolicy) error {
	policydefaults.Propagation(&obj.Spec)
	return nil
}
