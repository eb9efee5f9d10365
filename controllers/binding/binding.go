package binding

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/statusapply"
)

// conflictRequeue is the retry after a write refused for its optimistic
// lock: another phase wrote the binding since it was read, and the cache
// brings the new version within moments.
const conflictRequeue = 100 * time.Millisecond

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

// self maps a binding to its own request.
func self(_ context.Context, b client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(b)}}
}

// applyStatus writes the status fields a phase owns in one request, as the
// phase's field manager, locked on the binding's resourceVersion
// (statusapply.Apply): a new leader reads a phase's write whole or not at
// all — patch.Helper's two requests once left a binding Scheduled without
// the lastScheduledTime a new leader's restore of held capacity needs — and
// a phase working from a stale cache gets a conflict (and comes back), not
// a write over its newer one.
func applyStatus(ctx context.Context, c client.Client, kind string, b workv1alpha1.Binding, manager string, fields any) error {
	return statusapply.Apply(ctx, c, workv1alpha1.GroupVersion.WithKind(kind), client.ObjectKeyFromObject(b), b.GetResourceVersion(), manager, fields)
}

// kindOf is a binding's kind, KindResourceBinding or KindClusterResourceBinding.
func kindOf(b workv1alpha1.Binding) string {
	if _, ok := b.(*workv1alpha1.ClusterResourceBinding); ok {
		return KindClusterResourceBinding
	}
	return KindResourceBinding
}

// writeCondition writes the one condition a phase owns, of type t, in one
// request (applyStatus) when it changed from previous (nil: absent).
func writeCondition(ctx context.Context, c client.Client, kind string, previous *metav1.Condition, b workv1alpha1.Binding, manager, t string) error {
	now := conditions.Get(b, t)
	if now == nil || (previous != nil && equality.Semantic.DeepEqual(*previous, *now)) {
		return nil
	}
	err := applyStatus(ctx, c, kind, b, manager, struct {
		Conditions []metav1.Condition `json:"conditions"`
	}{[]metav1.Condition{*now}})
	// A binding whose last finalizer went is gone: nothing to say on it.
	return client.IgnoreNotFound(err)
}

// neverPlaced says whether c, a phase's condition of type t, would only
// say that a binding the phase never wrote to is not placed yet. The place
// phase speaks first (Scheduled): a new binding's render and aggregate
// phases keep silent until it does, so that a new binding costs the hub
// two status writes less, neither racing the first decision's optimistic
// write. Once written, their condition follows the placement (back to
// NotScheduled when it empties).
func neverPlaced(b workv1alpha1.Binding, c metav1.Condition, t string) bool {
	return c.Reason == workv1alpha1.BindingReasonNotScheduled && !conditions.Has(b, t) &&
		len(b.BindingSpec().GracefulEvictionTasks) == 0
}
