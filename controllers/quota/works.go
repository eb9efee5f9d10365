package quota

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// workKind is the kind a static assignment's Work name is hashed with, so
// that it never collides with a binding's Work.
const workKind = "FederatedResourceQuota"

// ResourceQuotaOf is the ResourceQuota a static assignment puts in its
// member: the quota's name and namespace, the assignment's hard limits.
func ResourceQuotaOf(q *policyv1alpha1.FederatedResourceQuota, a policyv1alpha1.StaticClusterAssignment) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Namespace: q.Namespace, Name: q.Name},
		Spec:       corev1.ResourceQuotaSpec{Hard: a.Hard.DeepCopy()},
	}
}

// writeWork creates or updates the Work that carries a static assignment's
// ResourceQuota to its member, in the member's execution namespace, the way
// the binding controller writes a binding's Works: named by
// binding.WorkName, labelled with the member, stripped of what a member's
// API server sets. controllers/execution (or a Pull member's agent) applies
// it and reports the ResourceQuota's status back in the Work's status.
func writeWork(ctx context.Context, c client.Client, q *policyv1alpha1.FederatedResourceQuota, a policyv1alpha1.StaticClusterAssignment) (*workv1alpha1.Work, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ResourceQuotaOf(q, a))
	if err != nil {
		return nil, fmt.Errorf("encode the ResourceQuota of member %s: %w", a.ClusterName, err)
	}
	manifest, err := json.Marshal(binding.Strip(&unstructured.Unstructured{Object: raw}).Object)
	if err != nil {
		return nil, fmt.Errorf("encode the ResourceQuota of member %s: %w", a.ClusterName, err)
	}
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace(a.ClusterName),
		Name:      binding.WorkName(workKind, q.Namespace, q.Name),
	}}
	_, err = controllerutil.CreateOrPatch(ctx, c, work, func() error {
		if work.Labels == nil {
			work.Labels = map[string]string{}
		}
		work.Labels[policyv1alpha1.FederatedResourceQuotaPermanentIDLabel] = string(q.UID)
		work.Labels[clusterv1alpha1.MemberLabel] = a.ClusterName
		if work.Annotations == nil {
			work.Annotations = map[string]string{}
		}
		work.Annotations[policyv1alpha1.FederatedResourceQuotaNamespaceAnnotation] = q.Namespace
		work.Annotations[policyv1alpha1.FederatedResourceQuotaNameAnnotation] = q.Name
		work.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}
		work.Spec.SuspendDispatching = ptr.To(false)
		work.Spec.PreserveResourcesOnDeletion = ptr.To(false)
		// A ResourceQuota of the same name the member made itself is not
		// taken over: the Work reports the conflict.
		work.Spec.ConflictResolution = policyv1alpha1.ConflictAbort
		return nil
	})
	return work, err
}

// worksOf lists the Works of a quota's static assignments.
func worksOf(ctx context.Context, c client.Client, q *policyv1alpha1.FederatedResourceQuota) ([]workv1alpha1.Work, error) {
	list := &workv1alpha1.WorkList{}
	if err := c.List(ctx, list, client.MatchingLabels{policyv1alpha1.FederatedResourceQuotaPermanentIDLabel: string(q.UID)}); err != nil {
		return nil, fmt.Errorf("list the Works of FederatedResourceQuota %s/%s: %w", q.Namespace, q.Name, err)
	}
	return list.Items, nil
}

func deleteWork(ctx context.Context, c client.Client, w *workv1alpha1.Work) error {
	if !w.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Work %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// memberQuotaStatus reads the ResourceQuota status the member reported in
// a Work's status; ok is false until the member has applied it.
func memberQuotaStatus(w *workv1alpha1.Work) (corev1.ResourceQuotaStatus, bool) {
	var st corev1.ResourceQuotaStatus
	for _, ms := range w.Status.ManifestStatuses {
		if ms.Identifier.Kind != "ResourceQuota" || !ms.Applied || ms.Status == nil {
			continue
		}
		if err := json.Unmarshal(ms.Status.Raw, &st); err != nil {
			return st, false
		}
		return st, true
	}
	return st, false
}
