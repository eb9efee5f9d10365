package enrolment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sigs.k8s.io/cluster-api/util/secret"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// reconcileTrigger waits for Cluster API: the control plane initialized
// (status.initialization.controlPlaneInitialized, not the deprecated phase)
// and the <cluster>-kubeconfig Secret present.
func (r *Reconciler) reconcileTrigger(ctx context.Context, s *scope) (bool, error) {
	c := s.cluster
	if !ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) {
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.WaitingForControlPlaneReason,
			"waiting for Cluster %s/%s to report status.initialization.controlPlaneInitialized", c.Namespace, c.Name)
		return false, nil
	}
	kubeconfig, err := secret.Get(ctx, r.APIReader, client.ObjectKeyFromObject(c), secret.Kubeconfig)
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.WaitingForKubeconfigReason,
				"waiting for Secret %s/%s", c.Namespace, secret.Name(c.Name, secret.Kubeconfig))
			return false, nil
		}
		return false, fmt.Errorf("read kubeconfig Secret of Cluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	s.kubeconfig = kubeconfig
	return true, nil
}

// reconcileExecutionNamespace creates flotilla-es-<member>, where the
// member's Works live. Owned by the member, so the garbage collector removes
// it should the member go without enrolment's help.
func (r *Reconciler) reconcileExecutionNamespace(ctx context.Context, s *scope) (bool, error) {
	ns := &corev1.Namespace{}
	name := clusterv1alpha1.ExecutionNamespace(s.memberName)
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case apierrors.IsNotFound(err):
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1alpha1.MemberLabel: s.memberName}}}
		if err := controllerutil.SetOwnerReference(s.member, ns, r.Client.Scheme()); err != nil {
			return false, err
		}
		if err := r.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create execution namespace %s: %w", name, err)
		}
	case err != nil:
		return false, fmt.Errorf("read execution namespace %s: %w", name, err)
	case !ns.DeletionTimestamp.IsZero():
		// Left from an earlier enrolment of the same name; wait until it is gone.
		s.markEnrolled(metav1.ConditionFalse, clusterv1alpha1.WaitingForExecutionNamespaceReason, "waiting for the old execution namespace %s to be deleted", name)
		s.requeue(5 * time.Second)
		return false, nil
	}
	return true, nil
}
