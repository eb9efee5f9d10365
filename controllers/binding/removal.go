package binding

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// RemovalsPacedReason is the event reason and the RemovalsPaced condition's
// reason while a member's Work removals wait their turn.
const RemovalsPacedReason = "MassRemoval"

// removeWork deletes a Work whose objects are to leave its member, unless
// the member's removal pace (Removals) is used up: then the Work stays, the
// member says why, and the caller asks again after the returned wait.
// trigger says what asked for the removal.
func (r *Renderer) removeWork(ctx context.Context, w *workv1alpha1.Work, trigger string) (time.Duration, error) {
	if !w.DeletionTimestamp.IsZero() {
		return 0, nil
	}
	memberName := w.Labels[clusterv1alpha1.MemberLabel]
	if r.Removals == nil || memberName == "" || ptr.Deref(w.Spec.PreserveResourcesOnDeletion, false) {
		return 0, r.deleteWork(ctx, w)
	}
	member := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: memberName}, member); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, r.deleteWork(ctx, w) // nothing of it left to remove objects from
		}
		return 0, fmt.Errorf("read MemberCluster %s: %w", memberName, err)
	}
	if applier.KeepsWhatRuns(member) {
		return 0, r.deleteWork(ctx, w) // its objects stay in the member
	}
	if evicting(member) {
		// A NoExecute taint moves workloads off the member at the eviction
		// rate (the evict phase, evict.go): pacing them again would only slow a
		// drain down.
		return 0, r.deleteWork(ctx, w)
	}
	live, err := r.liveWorks(ctx, memberName)
	if err != nil {
		return 0, err
	}
	if conditions.IsTrue(member, clusterv1alpha1.ConditionRemovalsPaced) && r.Removals.Resume(memberName, live, time.Now()) {
		// A previous leader was pacing this member: its last window is not
		// known here, so it counts as used up.
		ctrl.LoggerFrom(ctx).Info("Resuming the removal pace of a member paced before this process started", "member", memberName)
	}
	key := w.Namespace + "/" + w.Name
	d := r.Removals.Take(memberName, key, trigger, live, time.Now())
	if !d.Allowed {
		if d.Started {
			r.reportPacing(ctx, member, d.Limit, trigger)
		}
		return d.RetryAfter, nil
	}
	if err := r.deleteWork(ctx, w); err != nil {
		return 0, err
	}
	if d.Ended {
		r.reportPaced(ctx, member)
	}
	return 0, nil
}

// removeAskedFor deletes a Work whose removal a user asked for (its
// template or binding deleted): at once, whatever the member's pace, and
// out of the member's removal queue if a narrowed placement had put it
// there.
func (r *Renderer) removeAskedFor(ctx context.Context, w *workv1alpha1.Work) error {
	if err := r.deleteWork(ctx, w); err != nil {
		return err
	}
	r.keepWork(ctx, w.Labels[clusterv1alpha1.MemberLabel], w)
	return nil
}

// keepWork drops a Work wanted again, or removed by other means, from its
// member's removal queue.
func (r *Renderer) keepWork(ctx context.Context, memberName string, w *workv1alpha1.Work) {
	if r.Removals == nil || !r.Removals.Forget(memberName, w.Namespace+"/"+w.Name) {
		return
	}
	member := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: memberName}, member); err == nil {
		r.reportPaced(ctx, member)
	}
}

func evicting(m *clusterv1alpha1.MemberCluster) bool {
	for _, t := range m.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// liveWorks counts the member's Works that are not being deleted.
func (r *Renderer) liveWorks(ctx context.Context, member string) (int, error) {
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(member))); err != nil {
		return 0, fmt.Errorf("list the Works of member %s: %w", member, err)
	}
	n := 0
	for i := range works.Items {
		if works.Items[i].DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n, nil
}

// reportPacing says, on the member, that its removals now wait and what
// asked for them. Best effort: pacing goes on whether or not it is told.
func (r *Renderer) reportPacing(ctx context.Context, member *clusterv1alpha1.MemberCluster, limit int, trigger string) {
	msg := fmt.Sprintf("removing Flotilla-managed objects from member %s is paced: at most %d Works per %s (%.0f%% of its Works, at least %d); the first to wait was asked for by %s",
		member.Name, limit, r.Removals.Window, 100*r.Removals.Share, r.Removals.Burst, trigger)
	r.Recorder.Eventf(member, nil, corev1.EventTypeWarning, RemovalsPacedReason, "Remove", "%s", msg)
	r.setPacedCondition(ctx, member, metav1.Condition{Type: clusterv1alpha1.ConditionRemovalsPaced, Status: metav1.ConditionTrue,
		Reason: RemovalsPacedReason, Message: msg})
}

// reportPaced clears the member's RemovalsPaced condition once nothing waits.
func (r *Renderer) reportPaced(ctx context.Context, member *clusterv1alpha1.MemberCluster) {
	r.setPacedCondition(ctx, member, metav1.Condition{Type: clusterv1alpha1.ConditionRemovalsPaced, Status: metav1.ConditionFalse,
		Reason: clusterv1alpha1.RemovalsNotPacedReason, Message: "no removal of Works waits"})
}

func (r *Renderer) setPacedCondition(ctx context.Context, member *clusterv1alpha1.MemberCluster, c metav1.Condition) {
	helper, err := patch.NewHelper(member, r.Client)
	if err == nil {
		conditions.Set(member, c)
		err = helper.Patch(ctx, member, patch.WithOwnedConditions{Conditions: []string{clusterv1alpha1.ConditionRemovalsPaced}})
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Could not write the RemovalsPaced condition", "member", member.Name)
	}
}

// removalTrigger names what asks for a binding's Works to leave a member
// (a placement narrowed), for reports.
func removalTrigger(b workv1alpha1.Binding, member string) string {
	kind := KindResourceBinding
	if b.GetNamespace() == "" {
		kind = KindClusterResourceBinding
	}
	return fmt.Sprintf("%s %s no longer placing on %s", kind, objectName(b.GetNamespace(), b.GetName()), member)
}

// pacedNote is the Rendered message's note on removals that wait.
func pacedNote(members []string) string {
	return "removal from " + strings.Join(members, ", ") + " waits: the member's removals are paced (see its RemovalsPaced condition)"
}
