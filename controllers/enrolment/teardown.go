package enrolment

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/secret"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// drainPoll backs up the Work watch while a member drains.
const drainPoll = 10 * time.Second

// reconcileDelete drains and removes the member of a Cluster that is being
// deleted or no longer opts in: Terminating=True and a NoExecute taint move
// its workloads away; once its Works are gone from flotilla-es-<member>, or
// the drain timeout passed, its hub objects go and the finalizer is released.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	c := s.cluster
	reason := clusterv1alpha1.UnenrollingReason
	if !c.DeletionTimestamp.IsZero() {
		reason = clusterv1alpha1.ClusterDeletingReason
	}
	m, err := r.memberOf(ctx, c.Namespace, c.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if m == nil {
		return ctrl.Result{}, r.releaseCluster(ctx, s)
	}
	if err := r.writeTerminatingTaint(ctx, m, true); err != nil {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.member, s.memberPatch, s.memberName = m, helper, m.Name

	// A Cluster that opts out stays up: its workloads are placed elsewhere
	// and it keeps its own copies (applier.KeepsWhatRuns). A deleted
	// Cluster's objects are withdrawn as its Works go.
	kept := ""
	if reason == clusterv1alpha1.UnenrollingReason {
		kept = "; the Cluster no longer opts in, so it keeps what runs in it: nothing is deleted there"
	}
	if !conditions.IsTrue(m, clusterv1alpha1.ConditionTerminating) {
		r.Recorder.Eventf(c, m, corev1.EventTypeNormal, reason, "Drain", "Draining member %s before removing it: its bindings are placed on other members%s", m.Name, kept)
	}
	started := time.Now()
	if t := conditions.Get(m, clusterv1alpha1.ConditionTerminating); t != nil && t.Status == metav1.ConditionTrue {
		started = t.LastTransitionTime.Time
	}
	deadline := started.Add(r.DrainTimeout)

	works, err := r.countWorks(ctx, clusterv1alpha1.ExecutionNamespace(m.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	if works > 0 && time.Now().Before(deadline) {
		conditions.Set(m, metav1.Condition{Type: clusterv1alpha1.ConditionTerminating, Status: metav1.ConditionTrue, Reason: reason,
			Message: fmt.Sprintf("waiting for %d Works to leave %s; the member is removed at %s at the latest%s", works, clusterv1alpha1.ExecutionNamespace(m.Name), deadline.UTC().Format(time.RFC3339), kept)})
		return ctrl.Result{RequeueAfter: min(time.Until(deadline), drainPoll)}, nil
	}
	if works > 0 {
		r.Recorder.Eventf(c, m, corev1.EventTypeWarning, "DrainTimeout", "Drain",
			"Removing member %s with %d Works left after the drain timeout of %s%s", m.Name, works, r.DrainTimeout, kept)
	}
	conditions.Set(m, metav1.Condition{Type: clusterv1alpha1.ConditionTerminating, Status: metav1.ConditionTrue, Reason: reason, Message: "drained; removing the member"})

	if reason == clusterv1alpha1.UnenrollingReason && syncMode(m) == clusterv1alpha1.Push {
		// The member stays: take the hub's identity out of it. Best effort —
		// an unreachable member must not keep its Cluster from opting out.
		if err := r.removeMemberIdentity(ctx, c); err != nil {
			log.Error(err, "Could not remove the hub identity from the member; remove ServiceAccount flotilla-system/flotilla-hub by hand", "member", m.Name)
			r.Recorder.Eventf(c, m, corev1.EventTypeWarning, clusterv1alpha1.IdentityFailedReason, "Unenrol", "Could not remove the hub identity from member %s: %s", m.Name, err.Error())
		}
	}
	if err := r.removeMember(ctx, c.Namespace, m); err != nil {
		return ctrl.Result{}, err
	}
	s.memberGone = true
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, reason, "Remove", "Removed member %s", m.Name)
	return ctrl.Result{}, r.releaseCluster(ctx, s)
}

// reconcileOrphans removes the member of a Cluster that is gone, or that
// enrolment no longer holds.
func (r *Reconciler) reconcileOrphans(ctx context.Context, key types.NamespacedName) error {
	m, err := r.memberOf(ctx, key.Namespace, key.Name)
	if err != nil || m == nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Removing the member of a Cluster that is gone", "member", m.Name)
	if err := r.removeMember(ctx, key.Namespace, m); err != nil {
		return err
	}
	return r.removeEstimatorIfUnused(ctx, key.Namespace, key.Name)
}

// removeMember deletes a member and everything enrolment made for it on the hub.
func (r *Reconciler) removeMember(ctx context.Context, clusterNamespace string, m *clusterv1alpha1.MemberCluster) error {
	if err := r.removeAgent(ctx, clusterNamespace, m.Name); err != nil {
		return err
	}
	return r.deleteAll(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.SystemNamespace, Name: clusterv1alpha1.HubIdentitySecretName(m.Name)}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace(m.Name)}},
		m,
	)
}

// releaseCluster drops the member label and the finalizer; the name
// annotation stays, so that the Cluster gets the same name if it opts in again.
func (r *Reconciler) releaseCluster(ctx context.Context, s *scope) error {
	if err := r.removeEstimatorIfUnused(ctx, s.cluster.Namespace, s.cluster.Name); err != nil {
		return err
	}
	labels := s.cluster.GetLabels()
	delete(labels, clusterv1alpha1.MemberLabel)
	s.cluster.SetLabels(labels)
	controllerutil.RemoveFinalizer(s.cluster, clusterv1alpha1.ClusterFinalizer)
	return nil
}

// removeEstimatorIfUnused deletes the namespace's estimator CRS when no other
// Cluster of the namespace is a member.
func (r *Reconciler) removeEstimatorIfUnused(ctx context.Context, namespace, leaving string) error {
	members := &capiv1.ClusterList{}
	if err := r.Client.List(ctx, members, client.InNamespace(namespace), client.HasLabels{clusterv1alpha1.MemberLabel}); err != nil {
		return fmt.Errorf("list member Clusters of namespace %s: %w", namespace, err)
	}
	for i := range members.Items {
		if members.Items[i].Name != leaving {
			return nil
		}
	}
	return r.deleteAll(ctx,
		&addonsv1.ClusterResourceSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: estimatorAddon}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: estimatorAddon}},
	)
}

// removeMemberIdentity deletes the identity's objects from the member with
// CAPI's admin kubeconfig.
func (r *Reconciler) removeMemberIdentity(ctx context.Context, c *capiv1.Cluster) error {
	kubeconfig, err := secret.Get(ctx, r.APIReader, client.ObjectKeyFromObject(c), secret.Kubeconfig)
	if err != nil {
		return fmt.Errorf("read kubeconfig Secret: %w", err)
	}
	admin, _, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	return removeIdentity(ctx, admin.client)
}

func (r *Reconciler) countWorks(ctx context.Context, namespace string) (int, error) {
	works := &metav1.PartialObjectMetadataList{}
	works.SetGroupVersionKind(workv1alpha1.GroupVersion.WithKind("WorkList"))
	if err := r.Client.List(ctx, works, client.InNamespace(namespace)); err != nil {
		return 0, fmt.Errorf("list Works in %s: %w", namespace, err)
	}
	return len(works.Items), nil
}

// writeTerminatingTaint adds (on) or removes the member's terminating
// NoExecute taint in a write of its own, with an optimistic lock: spec.taints
// is shared with the taint policies and with users, and a merge patch writes
// the whole list, so a write made from a stale read would drop a taint set
// meanwhile. On a conflict it reads the member again from the API server
// and tries again (taintWriteRetry); m is left as written.
func (r *Reconciler) writeTerminatingTaint(ctx context.Context, m *clusterv1alpha1.MemberCluster, on bool) error {
	first := true
	err := retry.RetryOnConflict(taintWriteRetry, func() error {
		if !first {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
				return err
			}
		}
		first = false
		before := m.DeepCopy()
		if on {
			addTaint(m, corev1.Taint{Key: clusterv1alpha1.TaintTerminating, Effect: corev1.TaintEffectNoExecute})
		} else {
			removeTaint(m, clusterv1alpha1.TaintTerminating, corev1.TaintEffectNoExecute)
		}
		if len(before.Spec.Taints) == len(m.Spec.Taints) {
			return nil
		}
		return r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("write the terminating taint of member %s: %w", m.Name, err)
	}
	return nil
}

// taintWriteRetry bounds the retries of a taint write that lost a race to
// another writer of the member (about 2 s in all): a busy member is written
// by health, the taint policies and operators too.
var taintWriteRetry = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 500 * time.Millisecond}

// removeTaint removes the taints of key and effect.
func removeTaint(m *clusterv1alpha1.MemberCluster, key string, effect corev1.TaintEffect) {
	m.Spec.Taints = slices.DeleteFunc(m.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

// addTaint adds t unless a taint of its key and effect is there.
func addTaint(m *clusterv1alpha1.MemberCluster, t corev1.Taint) {
	for _, have := range m.Spec.Taints {
		if have.Key == t.Key && have.Effect == t.Effect {
			return
		}
	}
	now := metav1.Now()
	t.TimeAdded = &now
	m.Spec.Taints = append(m.Spec.Taints, t)
}
