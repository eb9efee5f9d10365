package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-work-flotilla-io-v1alpha1-resourcebinding,mutating=false,failurePolicy=fail,sideEffects=None,groups=work.flotilla.io,resources=resourcebindings,verbs=create;update,versions=v1alpha1,name=validation.resourcebinding.work.flotilla.io,admissionReviewVersions=v1,patch=`{"matchConditions":[{"name":"template-outside-the-binding-namespace","expression":"has(object.spec.resource.namespace) && object.spec.resource.namespace != '' && object.spec.resource.namespace != object.metadata.namespace"}]}`

// ResourceBinding refuses a ResourceBinding whose template reference
// (spec.resource.namespace) names another namespace than its own: a
// namespaced binding renders only templates of its namespace, or it would
// read — and copy into members — another tenant's Secrets. The check is the
// webhook's CEL matchCondition, evaluated by the apiserver: only bindings
// that break the rule are sent here, so the bindings the manager writes all
// day cost no call. CEL in the CRD cannot see metadata.namespace, hence a
// webhook.
type ResourceBinding struct{}

var _ admission.Validator[*workv1alpha1.ResourceBinding] = &ResourceBinding{}

// SetupWithManager registers the webhook.
func (w *ResourceBinding) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &workv1alpha1.ResourceBinding{}).WithValidator(w).Complete()
}

// ValidateCreate checks a new binding.
func (w *ResourceBinding) ValidateCreate(_ context.Context, obj *workv1alpha1.ResourceBinding) (admission.Warnings, error) {
	return nil, validateTemplateNamespace(obj)
}

// ValidateUpdate checks a changed binding.
func (w *ResourceBinding) ValidateUpdate(_ context.Context, _, obj *workv1alpha1.ResourceBinding) (admission.Warnings, error) {
	return nil, validateTemplateNamespace(obj)
}

// ValidateDelete allows every deletion.
func (w *ResourceBinding) ValidateDelete(context.Context, *workv1alpha1.ResourceBinding) (admission.Warnings, error) {
	return nil, nil
}

// TemplateNamespaceDetail is the denial of a template reference to another
// namespace.
const TemplateNamespaceDetail = "must be empty or the binding's own namespace %s: a ResourceBinding renders only templates of its own namespace; another namespace's template is claimed by a policy there"

func validateTemplateNamespace(rb *workv1alpha1.ResourceBinding) error {
	ns := rb.Spec.Resource.Namespace
	if ns == "" || ns == rb.Namespace {
		return nil
	}
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "resource", "namespace"), ns, fmt.Sprintf(TemplateNamespaceDetail, rb.Namespace))}
	return apierrors.NewInvalid(workv1alpha1.GroupVersion.WithKind("ResourceBinding").GroupKind(), rb.Name, errs)
}
