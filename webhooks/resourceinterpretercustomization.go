package webhooks

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
)

// +kubebuilder:webhook:path=/validate-config-flotilla-io-v1alpha1-resourceinterpretercustomization,mutating=false,failurePolicy=fail,sideEffects=None,groups=config.flotilla.io,resources=resourceinterpretercustomizations,verbs=create;update,versions=v1alpha1,name=validation.resourceinterpretercustomization.config.flotilla.io,admissionReviewVersions=v1

// ResourceInterpreterCustomization refuses customizations whose scripts do
// not compile or do not define their operation's function
// (internal/interpreter.ValidateCustomization): the Lua compiler is not
// something a CRD schema can run. It warns of fields accepted for Karmada
// compatibility that Flotilla does not run yet, and of operations another
// customization of the same kind already serves (the first by name wins).
type ResourceInterpreterCustomization struct {
	// Customizations reads the other customizations; the manager's client
	// when nil.
	Customizations client.Reader
	vm             *luavm.VM
}

var _ admission.Validator[*configv1alpha1.ResourceInterpreterCustomization] = &ResourceInterpreterCustomization{}

// SetupWithManager registers the webhook.
func (w *ResourceInterpreterCustomization) SetupWithManager(mgr ctrl.Manager) error {
	if w.Customizations == nil {
		w.Customizations = mgr.GetClient()
	}
	w.vm = luavm.New(luavm.Limits{})
	return ctrl.NewWebhookManagedBy(mgr, &configv1alpha1.ResourceInterpreterCustomization{}).WithValidator(w).Complete()
}

// ValidateCreate checks a new customization.
func (w *ResourceInterpreterCustomization) ValidateCreate(ctx context.Context, obj *configv1alpha1.ResourceInterpreterCustomization) (admission.Warnings, error) {
	return w.validate(ctx, obj)
}

// ValidateUpdate checks a changed customization.
func (w *ResourceInterpreterCustomization) ValidateUpdate(ctx context.Context, _, obj *configv1alpha1.ResourceInterpreterCustomization) (admission.Warnings, error) {
	return w.validate(ctx, obj)
}

// ValidateDelete allows every deletion.
func (w *ResourceInterpreterCustomization) ValidateDelete(context.Context, *configv1alpha1.ResourceInterpreterCustomization) (admission.Warnings, error) {
	return nil, nil
}

func (w *ResourceInterpreterCustomization) validate(ctx context.Context, obj *configv1alpha1.ResourceInterpreterCustomization) (admission.Warnings, error) {
	if errs := interpreter.ValidateCustomization(w.vm, &obj.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(configv1alpha1.GroupVersion.WithKind("ResourceInterpreterCustomization").GroupKind(), obj.Name, errs)
	}
	var warnings admission.Warnings
	if fields := interpreter.NotActedUpon(&obj.Spec.Customizations); len(fields) > 0 {
		warnings = append(warnings, fmt.Sprintf("spec.customizations.%s: accepted for Karmada compatibility, not run by Flotilla yet (multi-component workloads, docs/api.md)",
			strings.Join(fields, ", spec.customizations.")))
	}
	others := &configv1alpha1.ResourceInterpreterCustomizationList{}
	if err := w.Customizations.List(ctx, others); err != nil {
		return warnings, nil // the warnings below are a courtesy; the object is valid
	}
	for _, other := range others.Items {
		if other.Name == obj.Name || other.Name > obj.Name || other.Spec.Target != obj.Spec.Target {
			continue
		}
		for _, op := range interpreter.Operations {
			if op.Field == "dependencyInterpretation" {
				continue // every dependency script runs
			}
			if op.Script(&obj.Spec.Customizations) != nil && op.Script(&other.Spec.Customizations) != nil {
				warnings = append(warnings, fmt.Sprintf("spec.customizations.%s: %s %s is served by ResourceInterpreterCustomization %s, first by name; this script is not run",
					op.Field, obj.Spec.Target.APIVersion, obj.Spec.Target.Kind, other.Name))
			}
		}
	}
	return warnings, nil
}
