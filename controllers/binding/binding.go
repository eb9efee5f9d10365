package binding

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Binding kinds, as in Work annotations.
const (
	KindResourceBinding        = "ResourceBinding"
	KindClusterResourceBinding = "ClusterResourceBinding"
)

// NewBinding is an empty binding of kind (KindResourceBinding or
// KindClusterResourceBinding).
func NewBinding(kind string) workv1alpha1.Binding {
	if kind == KindClusterResourceBinding {
		return &workv1alpha1.ClusterResourceBinding{}
	}
	return &workv1alpha1.ResourceBinding{}
}

// TemplateRef is a reference to a binding's template, for events.
func TemplateRef(b workv1alpha1.Binding) *metav1.PartialObjectMetadata {
	res := b.BindingSpec().Resource
	t := &metav1.PartialObjectMetadata{}
	gv, _ := schema.ParseGroupVersion(res.APIVersion)
	t.SetGroupVersionKind(gv.WithKind(res.Kind))
	t.SetNamespace(res.Namespace)
	t.SetName(res.Name)
	t.SetUID(res.UID)
	t.SetResourceVersion(res.ResourceVersion)
	return t
}

// WorkToBinding maps a Work to its binding, for bindings of kind.
func WorkToBinding(kind string) handler.MapFunc {
	return func(_ context.Context, w client.Object) []reconcile.Request {
		a := w.GetAnnotations()
		if a[workv1alpha1.BindingKindAnnotation] != kind || a[workv1alpha1.BindingNameAnnotation] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a[workv1alpha1.BindingNamespaceAnnotation], Name: a[workv1alpha1.BindingNameAnnotation]}}}
	}
}

// Requests lists the bindings of kind that opts select, as reconcile
// requests: what a watch of another object maps to. A list error is logged
// and maps to nothing.
func Requests(ctx context.Context, c client.Reader, kind string, opts ...client.ListOption) []reconcile.Request {
	var list client.ObjectList = &workv1alpha1.ResourceBindingList{}
	if kind == KindClusterResourceBinding {
		list = &workv1alpha1.ClusterResourceBindingList{}
	}
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List bindings", "kind", kind)
		return nil
	}
	var out []reconcile.Request
	switch l := list.(type) {
	case *workv1alpha1.ResourceBindingList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	case *workv1alpha1.ClusterResourceBindingList:
		for i := range l.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	}
	return out
}
