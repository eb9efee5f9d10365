package binding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/eviction"
)

// Failback returns workloads to a member that recovered. An eviction under
// a policy with failover.cluster.failback: true lists the member in the
// binding's FailbackAnnotation. Once such a member is Ready again, carries
// no NoSchedule or NoExecute taint the binding does not tolerate, is not
// cordoned, and no eviction task for it is left on the binding, the
// binding is rebalanced — FailbackTriggeredAtAnnotation = now: the
// scheduler places it from scratch, as its policy asks — and the member
// leaves the list. Rebalances go one binding at a time through their own
// pacing.Queue at the eviction rate. The annotations have one writer,
// this controller.

// FailbackIndex indexes bindings by the members of their FailbackAnnotation.
const FailbackIndex = "flotilla.io/failback-from"

func failbackMembers(o client.Object) []string {
	v := o.GetAnnotations()[workv1alpha1.FailbackAnnotation]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// addFailback records member in the binding's FailbackAnnotation.
func addFailback(b client.Object, member string) {
	a := b.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	list := failbackMembers(b)
	if !slices.Contains(list, member) {
		list = append(list, member)
	}
	slices.Sort(list)
	a[workv1alpha1.FailbackAnnotation] = strings.Join(list, ",")
	b.SetAnnotations(a)
}

// failbackDue is the failback queue's last check before a slot is taken.
func (t *Evictor) failbackDue(ctx context.Context, k pacing.Key) (bool, error) {
	b := NewBinding(k.Kind)
	if err := t.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	back, gone, err := t.recovered(ctx, b)
	return len(back)+len(gone) > 0, err
}

// recovered sorts the binding's failback members into those it may go back
// to now and those that no longer exist.
func (t *Evictor) recovered(ctx context.Context, b workv1alpha1.Binding) (back, gone []string, err error) {
	if !b.GetDeletionTimestamp().IsZero() {
		return nil, nil, nil
	}
	spec := b.BindingSpec()
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	for _, name := range failbackMembers(b) {
		m := &clusterv1alpha1.MemberCluster{}
		if err := t.Client.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
			if apierrors.IsNotFound(err) {
				gone = append(gone, name)
				continue
			}
			return nil, nil, fmt.Errorf("read member %s: %w", name, err)
		}
		if !eviction.Evicting(spec, name) && Welcoming(m, tolerations) {
			back = append(back, name)
		}
	}
	return back, gone, nil
}

// Welcoming: the member is Ready, not cordoned, and has no NoSchedule or
// NoExecute taint that tolerations do not tolerate.
func Welcoming(m *clusterv1alpha1.MemberCluster, tolerations []corev1.Toleration) bool {
	if !m.DeletionTimestamp.IsZero() || m.Spec.Unschedulable || !conditions.IsTrue(m, clusterv1alpha1.ConditionReady) {
		return false
	}
	for i := range m.Spec.Taints {
		t := &m.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !capacity.Tolerates(tolerations, t) {
			return false
		}
	}
	return true
}

// failBack asks the scheduler for a placement from scratch and takes the
// recovered members off the list, in one write with an optimistic lock.
func (t *Evictor) failBack(ctx context.Context, k pacing.Key) error {
	b := NewBinding(k.Kind)
	if err := t.APIReader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	back, gone, err := t.recovered(ctx, b)
	if err != nil || len(back)+len(gone) == 0 {
		return err
	}
	before := b.DeepCopyObject().(client.Object)
	left := slices.DeleteFunc(failbackMembers(b), func(n string) bool { return slices.Contains(back, n) || slices.Contains(gone, n) })
	a := b.GetAnnotations()
	if len(left) == 0 {
		delete(a, workv1alpha1.FailbackAnnotation)
	} else {
		a[workv1alpha1.FailbackAnnotation] = strings.Join(left, ",")
	}
	if len(back) > 0 {
		// The next whole second: a decision made earlier in this second
		// is recorded as this second, and must not count as the answer.
		a[workv1alpha1.FailbackTriggeredAtAnnotation] = time.Unix(t.Now().Unix()+1, 0).UTC().Format(time.RFC3339)
	}
	b.SetAnnotations(a)
	if err := t.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("trigger failback of %s: %w", k, err)
	}
	if len(back) > 0 {
		t.Recorder.Eventf(b, nil, corev1.EventTypeNormal, clusterv1alpha1.FailbackReason, "Failback",
			"Member %s recovered: rebalancing to the placement the policy asks for", strings.Join(back, ", "))
	}
	return nil
}

// bindingsFailingBackTo maps a member to the bindings that list it.
func (t *Evictor) bindingsFailingBackTo(kind string) handler.MapFunc {
	return func(ctx context.Context, m client.Object) []reconcile.Request {
		return Requests(ctx, t.Client, kind, client.MatchingFields{FailbackIndex: m.GetName()})
	}
}

// memberMayHaveRecovered passes member changes of taints, cordon,
// readiness and deletion.
func memberMayHaveRecovered() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && (oldM.Generation != newM.Generation ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionReady) != conditions.IsTrue(newM, clusterv1alpha1.ConditionReady))
		},
		CreateFunc: func(event.CreateEvent) bool { return false },
	}
}
