package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
)

// +kubebuilder:webhook:path=/validate-policy-flotilla-io-v1alpha1-federatedresourcequota,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.flotilla.io,resources=federatedresourcequotas,verbs=create;update,versions=v1alpha1,name=validation.federatedresourcequota.policy.flotilla.io,admissionReviewVersions=v1

// FederatedResourceQuota rejects quotas whose quantities are negative or whose
// static assignments share out more than overall grants.
type FederatedResourceQuota struct{}

var _ admission.Validator[*policyv1alpha1.FederatedResourceQuota] = &FederatedResourceQuota{}

// SetupWithManager registers the webhook.
func (w *FederatedResourceQuota) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &policyv1alpha1.FederatedResourceQuota{}).WithValidator(w).Complete()
}

// ValidateCreate checks a new quota.
func (w *FederatedResourceQuota) ValidateCreate(_ context.Context, obj *policyv1alpha1.FederatedResourceQuota) (admission.Warnings, error) {
	return nil, validateQuota(obj)
}

// ValidateUpdate checks a changed quota.
func (w *FederatedResourceQuota) ValidateUpdate(_ context.Context, _, obj *policyv1alpha1.FederatedResourceQuota) (admission.Warnings, error) {
	return nil, validateQuota(obj)
}

// ValidateDelete allows every deletion.
func (w *FederatedResourceQuota) ValidateDelete(context.Context, *policyv1alpha1.FederatedResourceQuota) (admission.Warnings, error) {
	return nil, nil
}

func validateQuota(obj *policyv1alpha1.FederatedResourceQuota) error {
	errs := quota.ValidateSpec(&obj.Spec, field.NewPath("spec"))
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(policyv1alpha1.GroupVersion.WithKind("FederatedResourceQuota").GroupKind(), obj.Name, errs)
}
