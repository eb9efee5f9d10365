// Package customization keeps an interpreter's customizations in step with
// the hub's ResourceInterpreterCustomizations: on any change it loads the
// whole set again (internal/interpreter.Load decides which script serves
// which kind and operation), then tells Changed which kinds it concerns so
// that objects of those kinds are read again with the new scripts.
package customization

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// +kubebuilder:rbac:groups=config.flotilla.io,resources=resourceinterpretercustomizations,verbs=get;list;watch

// Reconciler loads the customizations into Interpreter.
type Reconciler struct {
	Client      client.Reader
	Interpreter *interpreter.Interpreter
	// Changed, when set, is told each target kind whose customizations
	// changed, after they are loaded.
	Changed func(schema.GroupVersionKind)

	// loaded is each customization's spec as last loaded; only the one
	// worker touches it.
	loaded map[string]configv1alpha1.ResourceInterpreterCustomizationSpec
}

// SetupWithManager registers the controller under name (the hub and
// flotilla-agent each run one).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, name string) error {
	if r.Client == nil || r.Interpreter == nil {
		return errors.New("customization: Client and Interpreter must be set")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&configv1alpha1.ResourceInterpreterCustomization{}).
		// One worker: each load replaces the whole set.
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Reconcile loads every customization again.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &configv1alpha1.ResourceInterpreterCustomizationList{}
	if err := r.Client.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("list ResourceInterpreterCustomizations: %w", err)
	}
	r.Interpreter.Load(list.Items)

	now := make(map[string]configv1alpha1.ResourceInterpreterCustomizationSpec, len(list.Items))
	for _, ric := range list.Items {
		now[ric.Name] = ric.Spec
	}
	changed := map[schema.GroupVersionKind]bool{}
	target := func(s configv1alpha1.ResourceInterpreterCustomizationSpec) schema.GroupVersionKind {
		return schema.FromAPIVersionAndKind(s.Target.APIVersion, s.Target.Kind)
	}
	for name, spec := range now {
		if old, ok := r.loaded[name]; !ok || !equality.Semantic.DeepEqual(old, spec) {
			changed[target(spec)] = true
			if ok {
				changed[target(old)] = true
			}
		}
	}
	for name, old := range r.loaded {
		if _, ok := now[name]; !ok {
			changed[target(old)] = true
		}
	}
	r.loaded = now
	if r.Changed != nil {
		for gvk := range changed {
			r.Changed(gvk)
		}
	}
	return ctrl.Result{}, nil
}
